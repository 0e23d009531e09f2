#include "DisplayCheck.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include <dlfcn.h>

namespace tewb::workbench {

namespace {

bool is_set(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0';
}

enum class Answer { Pending, Answers, Silent, Unknown };

// libxcb is what Qt's xcb plugin connects through; loaded here only to ask, so the program does not link it.
Answer connect_to_x(const char* display) {
    void* xcb = ::dlopen("libxcb.so.1", RTLD_NOW | RTLD_LOCAL);
    if (xcb == nullptr) return Answer::Unknown;
    using Connect = void* (*)(const char*, int*);
    using HasError = int (*)(void*);
    using Disconnect = void (*)(void*);
    const auto connect = reinterpret_cast<Connect>(::dlsym(xcb, "xcb_connect"));
    const auto has_error = reinterpret_cast<HasError>(::dlsym(xcb, "xcb_connection_has_error"));
    const auto disconnect = reinterpret_cast<Disconnect>(::dlsym(xcb, "xcb_disconnect"));
    if (connect == nullptr || has_error == nullptr || disconnect == nullptr) return Answer::Unknown;
    void* connection = connect(display, nullptr);
    const bool answers = connection != nullptr && has_error(connection) == 0;
    if (connection != nullptr) disconnect(connection);
    return answers ? Answer::Answers : Answer::Silent;
}

}  // namespace

std::optional<std::string> display_problem(int limit_ms) {
    const char* platform = std::getenv("QT_QPA_PLATFORM");
    const bool x11 = platform == nullptr || *platform == '\0' || std::string_view(platform).substr(0, 3) == "xcb";
    if (!x11) return std::nullopt;  // offscreen, wayland, vnc…: Qt's to judge
    if (!is_set("DISPLAY")) {
        if (is_set("WAYLAND_DISPLAY") && (platform == nullptr || *platform == '\0')) return std::nullopt;
        return "no display to open a window on (neither DISPLAY nor WAYLAND_DISPLAY is set); run it in a desktop session, or "
               "headless with QT_QPA_PLATFORM=offscreen, or use te-bench on a server";
    }
    const std::string display = std::getenv("DISPLAY");
    // A display on another host may not answer for minutes: asked on a thread, waited for at most limit_ms.
    struct Shared {
        std::mutex mutex;
        std::condition_variable done;
        Answer answer = Answer::Pending;
    };
    auto shared = std::make_shared<Shared>();
    std::thread([shared, display] {
        const Answer answer = connect_to_x(display.c_str());
        const std::lock_guard lock(shared->mutex);
        shared->answer = answer;
        shared->done.notify_all();
    }).detach();
    std::unique_lock lock(shared->mutex);
    shared->done.wait_for(lock, std::chrono::milliseconds(limit_ms), [&] { return shared->answer != Answer::Pending; });
    if (shared->answer == Answer::Answers || shared->answer == Answer::Unknown) return std::nullopt;
    const std::string how = shared->answer == Answer::Pending
                                ? "did not answer within " + std::to_string(limit_ms / 1000) + " s"
                                : "does not answer (no X server accepts the connection)";
    return "the X display '" + display + "' (DISPLAY) " + how + "; start it, set DISPLAY to one that runs, or run headless "
           "with QT_QPA_PLATFORM=offscreen";
}

std::optional<std::string> platform_problem(const std::vector<std::string>& platform_dirs) {
    const char* value = std::getenv("QT_QPA_PLATFORM");
    if (value == nullptr || *value == '\0') return std::nullopt;
    // A plugin file libq<key>.so serves the platform <key>; Wayland's generic plugin serves "wayland".
    std::set<std::string> known;
    for (const std::string& dir : platform_dirs) {
        std::error_code error;
        for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(dir), error)) {
            const std::string file = entry.path().filename().string();
            if (file.size() <= 7 || file.compare(0, 4, "libq") != 0 || file.compare(file.size() - 3, 3, ".so") != 0) continue;
            const std::string key = file.substr(4, file.size() - 7);
            known.insert(key);
            if (key == "wayland-generic") known.insert("wayland");
        }
    }
    const std::string text = value;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find(';', start), text.size());
        const std::string name = text.substr(start, std::min(text.find(':', start), end) - start);
        if (known.count(name) != 0) return std::nullopt;
        start = end + 1;
    }
    std::string allowed;
    for (const std::string& key : known) allowed += (allowed.empty() ? "" : ", ") + key;
    const std::string shown = text.size() > 80 ? text.substr(0, 80) + "..." : text;
    return "QT_QPA_PLATFORM '" + shown + "': no such Qt platform plugin here; allowed: " +
           (allowed.empty() ? std::string("none found (is Qt's platform plugin package installed?)") : allowed) +
           ", or leave it unset on a desktop";
}

}  // namespace tewb::workbench
