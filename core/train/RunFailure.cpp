#include "core/train/RunFailure.h"

#include <new>
#include <string_view>

#include <c10/util/Exception.h>

#include "core/common/Error.h"

namespace tewb {

namespace {

std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

bool says_out_of_memory(std::string_view text) {
    return text.find("not enough memory") != std::string_view::npos || text.find("out of memory") != std::string_view::npos;
}

}  // namespace

RunFailure classify_failure(const std::exception_ptr& error, bool in_job, bool on_cuda) {
    RunFailure f;
    const ErrorKind otherwise = in_job ? ErrorKind::Distributed : ErrorKind::Runtime;
    try {
        std::rethrow_exception(error);
    } catch (const DistError& e) {
        f.kind = ErrorKind::Distributed;
        f.detail = e.what();
    } catch (const NumericsError& e) {
        f.kind = ErrorKind::Numerics;
        f.detail = e.what();
    } catch (const c10::OutOfMemoryError& e) {
        f.kind = ErrorKind::OutOfMemory;
        f.detail = first_line(e.what_without_backtrace());
        f.from_libtorch = true;
    } catch (const std::bad_alloc& e) {
        f.kind = ErrorKind::OutOfMemory;
        f.detail = e.what();
        f.host_memory = true;
    } catch (const c10::Error& e) {
        const std::string text = e.what_without_backtrace();
        f.detail = first_line(text);
        f.from_libtorch = true;
        f.kind = says_out_of_memory(text) ? ErrorKind::OutOfMemory : otherwise;
        f.host_memory = f.kind == ErrorKind::OutOfMemory && !on_cuda;
    } catch (const std::exception& e) {
        f.kind = otherwise;
        f.detail = in_job ? first_line(e.what()) : std::string(e.what());
    } catch (...) {
        f.kind = otherwise;
        f.detail = "an exception that is not a std::exception";
    }
    return f;
}

}  // namespace tewb
