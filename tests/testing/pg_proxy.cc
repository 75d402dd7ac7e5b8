#include "testing/pg_proxy.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string_view>
#include <vector>

namespace orch::testing {

namespace {

int connect_to(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

struct Link {
  int client = -1;
  int server = -1;
  bool drop_at_answer = false;  // a COMMIT whose answer is to be lost went to the server
};

}  // namespace

Expected<std::unique_ptr<PgProxy>> PgProxy::start(const std::string& server_url) {
  // postgresql://USER@HOST:PORT/DB...
  const std::size_t at = server_url.find('@');
  const std::size_t colon = server_url.find(':', at == std::string::npos ? 13 : at);
  const std::size_t slash = server_url.find('/', colon == std::string::npos ? 0 : colon);
  if (at == std::string::npos || colon == std::string::npos || slash == std::string::npos)
    return fail(ErrorCode::InvalidInput, "pg proxy: cannot read HOST:PORT in " + server_url);
  const std::string host = server_url.substr(at + 1, colon - at - 1);
  const int server_port = std::stoi(server_url.substr(colon + 1, slash - colon - 1));
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 64) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return fail(ErrorCode::Io, fmt::format("pg proxy: cannot listen: {}", std::strerror(errno)));
  return std::unique_ptr<PgProxy>(new PgProxy(listener, ntohs(addr.sin_port), host, server_port));
}

PgProxy::PgProxy(int listener, int port, std::string host, int server_port)
    : listener_(listener),
      port_(port),
      server_host_(std::move(host)),
      server_port_(server_port),
      thread_([this] { serve(); }) {}

PgProxy::~PgProxy() {
  stop_ = true;
  thread_.join();
  ::close(listener_);
}

std::string PgProxy::through(const std::string& url) const {
  std::string out = url;
  const std::string from = fmt::format("{}:{}/", server_host_, server_port_);
  const std::size_t at = out.find(from);
  if (at != std::string::npos) out.replace(at, from.size(), fmt::format("{}:{}/", server_host_, port_));
  return out;
}

void PgProxy::serve() {
  std::vector<Link> links;
  const auto close_link = [this](Link& link) {
    ::close(link.client);
    ::close(link.server);
    link.client = link.server = -1;
    ++dropped_;
  };
  char buf[65536];
  while (!stop_) {
    if (drop_all_.exchange(false))
      for (Link& link : links) close_link(link);
    std::erase_if(links, [](const Link& link) { return link.client < 0; });
    std::vector<pollfd> fds{{listener_, POLLIN, 0}};
    for (const Link& link : links) {
      fds.push_back({link.client, POLLIN, 0});
      fds.push_back({link.server, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      const int server = client >= 0 && !down_ ? connect_to(server_host_, server_port_) : -1;
      if (server >= 0) {
        links.push_back({client, server, false});
      } else if (client >= 0) {
        ::close(client);  // down: a server that is not there
      }
    }
    for (std::size_t i = 0; i + 1 < fds.size(); i += 2) {
      if (i / 2 >= links.size()) break;
      Link& link = links[i / 2];
      if (link.client < 0) continue;
      if (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::read(link.client, buf, sizeof buf);
        const std::string_view bytes(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
        const Commit what =
            bytes.find("COMMIT") != std::string_view::npos ? commit_.exchange(Commit::Pass) : Commit::Pass;
        if (n <= 0 || what == Commit::Lose) {
          close_link(link);
          continue;
        }
        if (what == Commit::LoseAnswer) link.drop_at_answer = true;
        if (!write_all(link.server, buf, static_cast<std::size_t>(n))) {
          close_link(link);
          continue;
        }
      }
      if (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::read(link.server, buf, sizeof buf);
        if (n <= 0 || link.drop_at_answer || !write_all(link.client, buf, static_cast<std::size_t>(n)))
          close_link(link);
      }
    }
  }
  for (Link& link : links)
    if (link.client >= 0) close_link(link);
}

}  // namespace orch::testing
