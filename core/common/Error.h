#pragma once

#include <stdexcept>
#include <string>

namespace tewb {

// Errors that cross core's boundary. Each message says what was wrong and what to do about it.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A value the user gave is invalid; the message names the setting, the value and what is allowed.
class ConfigError : public Error {
public:
    using Error::Error;
};

// Training diverged (loss not finite).
class NumericsError : public Error {
public:
    using Error::Error;
};

// A record or file could not be read or written (bad JSON, unwritable path, database failure).
class DataError : public Error {
public:
    using Error::Error;
};

// A data-parallel job could not form or went wrong between its processes: a rank that died, did not
// arrive or answer in time, a port in use, configurations that differ. The message names the rank.
class DistError : public Error {
public:
    using Error::Error;
};

}  // namespace tewb
