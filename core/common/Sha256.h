#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace tewb {

// SHA-256 (OpenSSL's libcrypto) as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);
// Of a whole file, read in chunks (a 10 GB token file costs no memory). Throws DataError naming the file
// when it cannot be opened or read.
std::string sha256_of_file(const std::filesystem::path& path);

}  // namespace tewb
