#pragma once

// A TCP socket bound to 127.0.0.1 at a port the kernel chose, for tests that need a port nothing else holds:
// kept open (and listened on) it is a port in use; closed at once, a port nobody listens on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

struct LoopbackPort {
    int fd = -1;  // -1 when no socket could be bound
    int port = 0;
};

inline LoopbackPort bind_loopback_port() {
    LoopbackPort out;
    out.fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (out.fd < 0 || ::bind(out.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(out.fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        if (out.fd >= 0) ::close(out.fd);
        return {};
    }
    out.port = ntohs(address.sin_port);
    return out;
}
