#include "core/common/Sha256.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include <openssl/evp.h>

#include "core/common/Error.h"

namespace tewb {

namespace {

struct DigestContext {
    DigestContext() : ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
        if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256: OpenSSL could not start a digest");
    }
    void add(const void* data, std::size_t size) {
        if (EVP_DigestUpdate(ctx.get(), data, size) != 1) throw std::runtime_error("SHA-256: OpenSSL digest update failed");
    }
    std::string hex() {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int length = 0;
        if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) throw std::runtime_error("SHA-256: OpenSSL digest failed");
        static constexpr char kDigits[] = "0123456789abcdef";
        std::string out;
        out.reserve(2 * length);
        for (unsigned int i = 0; i < length; ++i) {
            out.push_back(kDigits[digest[i] >> 4]);
            out.push_back(kDigits[digest[i] & 15]);
        }
        return out;
    }
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx;
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
    DigestContext digest;
    digest.add(bytes.data(), bytes.size());
    return digest.hex();
}

std::string sha256_of_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(path.string() + ": cannot be opened (" + std::strerror(errno) + ")");
    DigestContext digest;
    std::vector<char> chunk(1 << 20);
    while (in) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        if (in.gcount() > 0) digest.add(chunk.data(), static_cast<std::size_t>(in.gcount()));
    }
    if (in.bad()) throw DataError(path.string() + ": read failed (" + std::strerror(errno) + ")");
    return digest.hex();
}

}  // namespace tewb
