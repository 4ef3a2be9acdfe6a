// connect_mesh: rank i connects to every j < i while a thread accepts every j > i, so no order of
// start-up can deadlock. Every connection is authenticated, then introduced by a fixed-size hello.
#include "transport/tcp/mesh.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <exception>
#include <set>
#include <stop_token>
#include <thread>

#include "base/byte_codec.h"
#include "base/errors.h"
#include "transport/tcp/socket_link.h"

namespace kolo::transport {

namespace {

// Hello: rank (u32) || size (u32) || round (u64) || target rank (u32), little-endian; answered by
// one HelloStatus byte.
constexpr size_t kHelloSize = 20;
using HelloBytes = std::array<std::byte, kHelloSize>;

enum class HelloStatus : uint8_t {
  accepted = 0,
  wrong_round,
  wrong_size,
  bad_rank,
  duplicate,
  wrong_target
};

const char* describe(HelloStatus status) {
  switch (status) {
    case HelloStatus::accepted:
      return "accepted";
    case HelloStatus::wrong_round:
      return "it belongs to another round (init generation)";
    case HelloStatus::wrong_size:
      return "it belongs to a job of another size";
    case HelloStatus::bad_rank:
      return "the rank is not one that should connect to this one";
    case HelloStatus::duplicate:
      return "that rank is already connected";
    case HelloStatus::wrong_target:
      return "this address leads to another rank of the job";
  }
  return "unknown reason";
}

struct Hello {
  uint32_t rank = 0;
  uint32_t size = 0;
  uint64_t round = 0;
  uint32_t target = 0;  // the rank the connecting side means to reach
};

// rank (u32) || size (u32) || round (u64) || target (u32), little-endian.
HelloBytes encode(const Hello& hello) {
  HelloBytes bytes{};
  store_little_endian(bytes.data(), hello.rank, 4);
  store_little_endian(bytes.data() + 4, hello.size, 4);
  store_little_endian(bytes.data() + 8, hello.round, 8);
  store_little_endian(bytes.data() + 16, hello.target, 4);
  return bytes;
}

Hello decode(const HelloBytes& bytes) {
  Hello hello;
  hello.rank = static_cast<uint32_t>(load_little_endian(bytes.data(), 4));
  hello.size = static_cast<uint32_t>(load_little_endian(bytes.data() + 4, 4));
  hello.round = load_little_endian(bytes.data() + 8, 8);
  hello.target = static_cast<uint32_t>(load_little_endian(bytes.data() + 16, 4));
  return hello;
}

// "rank 3 on host 'node2'", or "rank 3" when the hosts are not known.
std::string rank_on_host(const MeshOptions& options, int rank) {
  if (static_cast<size_t>(rank) >= options.hosts.size()) return fmt::format("rank {}", rank);
  return fmt::format("rank {} on host '{}'", rank, options.hosts[rank]);
}

// "rank 3 on host 'node2' (10.0.0.2:4711)": every later error about this link names both, so a
// survivor's message says which machine to look at, not only an address.
std::string describe_rank(const MeshOptions& options, int rank, const std::string& address) {
  return fmt::format("{} ({})", rank_on_host(options, rank), address);
}

std::string join_ranks(const std::vector<int>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ", "));
}

// A deadline no later than `deadline` and at most `cap` from now.
Deadline capped(const Deadline& deadline, Duration cap) {
  const Duration left = deadline.at() - Clock::now();
  return Deadline(std::max(Duration::zero(), std::min(left, cap)));
}

// Accepts the higher ranks. Runs on its own thread; only that thread touches `pending_` and the
// links of higher ranks until it is joined.
class Acceptor {
 public:
  Acceptor(const MeshOptions& options, const Socket& listener, const Secret& secret,
           const Logger& logger, std::vector<std::unique_ptr<Link>>& links)
      : options_(options), listener_(listener), secret_(secret), logger_(logger), links_(links) {
    for (int r = options.rank + 1; r < options.size; ++r) pending_.insert(r);
  }

  void run(const std::stop_token& stop) {
    try {
      while (!pending_.empty() && !stop.stop_requested() && !options_.deadline.expired()) {
        // Short slices so a failure on the connecting side stops this thread promptly.
        Socket socket = accept_tcp(listener_, capped(options_.deadline, kSlice));
        if (!socket.valid()) continue;
        const std::string remote = peer_address(socket);
        try {
          accept_one(std::move(socket), remote);
        } catch (const Error& e) {
          logger_.warn("rank {}: refused mesh connection from {}: {}", options_.rank, remote,
                       e.what());
        }
      }
    } catch (...) {
      failure_ = std::current_exception();
    }
  }

  [[nodiscard]] std::vector<int> missing() const { return {pending_.begin(), pending_.end()}; }
  [[nodiscard]] std::exception_ptr failure() const { return failure_; }

 private:
  static constexpr Duration kSlice = std::chrono::milliseconds(100);

  void accept_one(Socket socket, const std::string& remote) {
    set_nodelay(socket);
    const std::string& who = remote;
    const Deadline deadline = capped(options_.deadline, options_.handshake_timeout);
    authenticate_server(socket, secret_, deadline, who);
    HelloBytes bytes{};
    read_all(socket, bytes.data(), bytes.size(), deadline, who);
    const Hello hello = decode(bytes);
    const HelloStatus status = check(hello);
    const auto reply = static_cast<uint8_t>(status);
    write_all(socket, &reply, 1, deadline, who);
    if (status == HelloStatus::wrong_target) {
      // Expected when hosts share a private address (docker0): the peer tries its next one.
      logger_.debug("rank {}: rank {} reached this rank at {} while looking for rank {}; refused",
                    options_.rank, hello.rank, remote, hello.target);
      return;
    }
    if (status != HelloStatus::accepted) {
      throw ProtocolError(fmt::format(
          "hello from rank {} (size {}, round {}) refused: {}; this is rank {} of {} in round {}",
          hello.rank, hello.size, hello.round, describe(status), options_.rank, options_.size,
          options_.round));
    }
    const int rank = static_cast<int>(hello.rank);
    logger_.debug("rank {}: accepted rank {} from {}", options_.rank, rank, remote);
    links_[rank] = make_socket_link(std::move(socket), rank, describe_rank(options_, rank, remote));
    pending_.erase(rank);
  }

  [[nodiscard]] HelloStatus check(const Hello& hello) const {
    if (hello.target != static_cast<uint32_t>(options_.rank)) return HelloStatus::wrong_target;
    if (hello.round != options_.round) return HelloStatus::wrong_round;
    if (hello.size != static_cast<uint32_t>(options_.size)) return HelloStatus::wrong_size;
    if (hello.rank <= static_cast<uint32_t>(options_.rank) ||
        hello.rank >= static_cast<uint32_t>(options_.size)) {
      return HelloStatus::bad_rank;
    }
    if (pending_.count(static_cast<int>(hello.rank)) == 0) return HelloStatus::duplicate;
    return HelloStatus::accepted;
  }

  const MeshOptions& options_;
  const Socket& listener_;
  const Secret& secret_;
  const Logger& logger_;
  std::vector<std::unique_ptr<Link>>& links_;
  std::set<int> pending_;
  std::exception_ptr failure_;
};

// Why one attempt at one candidate address failed. `definite` marks an answer from a kolo peer of
// this job that settles the matter (wrong round or size, wrong secret): trying again cannot help.
struct AttemptFailure {
  std::string why;
  bool definite = false;
};

// Connect, authenticate and say hello at one address, within `deadline`. Returns null and fills
// `failure` when this address does not lead to `peer`.
std::unique_ptr<Link> attempt(const MeshOptions& options, int peer, const Endpoint& endpoint,
                              const Secret& secret, const Deadline& deadline,
                              AttemptFailure& failure) {
  const std::string who = describe_rank(options, peer, endpoint.to_string());
  try {
    Socket socket = connect_tcp(endpoint, deadline);
    set_nodelay(socket);
    authenticate_client(socket, secret, deadline, who);
    const HelloBytes hello =
        encode(Hello{static_cast<uint32_t>(options.rank), static_cast<uint32_t>(options.size),
                     options.round, static_cast<uint32_t>(peer)});
    write_all(socket, hello.data(), hello.size(), deadline, who);
    uint8_t reply = 0xff;
    read_all(socket, &reply, 1, deadline, who);
    if (reply == static_cast<uint8_t>(HelloStatus::accepted)) {
      return make_socket_link(std::move(socket), peer, who);
    }
    const bool known = reply <= static_cast<uint8_t>(HelloStatus::wrong_target);
    failure.why = fmt::format("refused our hello (rank {}, size {}, round {}): {}", options.rank,
                              options.size, options.round,
                              known ? describe(static_cast<HelloStatus>(reply)) : "unknown status");
    failure.definite = reply != static_cast<uint8_t>(HelloStatus::wrong_target);
  } catch (const ProtocolError& e) {
    failure = {e.what(), true};
  } catch (const Error& e) {  // timeouts, refused or unreachable addresses, closed connections
    failure = {e.what(), false};
  }
  return nullptr;
}

// Tries the peer's candidate addresses in order, again and again until the mesh deadline, and
// returns the first link that completes the hello. Throws ProtocolError when a pass ends with a
// definite refusal, TimeoutError (naming every address and why) at the deadline.
std::unique_ptr<Link> connect_to(const MeshOptions& options, int peer, const Secret& secret,
                                 const Logger& logger) {
  const std::vector<Endpoint>& candidates = options.endpoints[peer];
  std::vector<AttemptFailure> failures(candidates.size());
  auto tried = [&] {
    std::vector<std::string> lines;
    for (size_t i = 0; i < candidates.size(); ++i) {
      lines.push_back(fmt::format("{}: {}", candidates[i].to_string(),
                                  failures[i].why.empty() ? "not tried" : failures[i].why));
    }
    return fmt::format("{}", fmt::join(lines, "; "));
  };
  auto backoff = std::chrono::milliseconds(20);
  for (;;) {
    const AttemptFailure* definite = nullptr;
    for (size_t i = 0; i < candidates.size() && !options.deadline.expired(); ++i) {
      auto link = attempt(options, peer, candidates[i], secret,
                          capped(options.deadline, options.attempt_timeout), failures[i]);
      if (link) {
        logger.debug("rank {}: reached {} at {} (address {} of {})", options.rank,
                     rank_on_host(options, peer), candidates[i].to_string(), i + 1,
                     candidates.size());
        return link;
      }
      if (failures[i].definite && definite == nullptr) definite = &failures[i];
    }
    if (definite != nullptr) {
      throw ProtocolError(
          fmt::format("rank {}: {} at {}", options.rank, rank_on_host(options, peer), tried()));
    }
    if (options.deadline.expired()) {
      throw TimeoutError(
          fmt::format("{} at none of its addresses ({})", rank_on_host(options, peer), tried()));
    }
    std::this_thread::sleep_for(std::min<Duration>(backoff, options.deadline.at() - Clock::now()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

void validate(const MeshOptions& options) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    throw InvalidArgument(fmt::format("connect_mesh: rank {} is outside a job of size {}",
                                      options.rank, options.size));
  }
  if (options.endpoints.size() != static_cast<size_t>(options.size)) {
    throw InvalidArgument(fmt::format("connect_mesh: {} endpoints for a job of size {}",
                                      options.endpoints.size(), options.size));
  }
  for (int r = 0; r < options.size; ++r) {
    if (r != options.rank && options.endpoints[r].empty()) {
      throw InvalidArgument(fmt::format("connect_mesh: rank {} published no address", r));
    }
  }
}

}  // namespace

std::vector<std::unique_ptr<Link>> connect_mesh(const MeshOptions& options, const Socket& listener,
                                                const Secret& secret, const Logger& logger) {
  validate(options);
  std::vector<std::unique_ptr<Link>> links(options.size);
  if (options.size == 1) return links;

  Acceptor acceptor(options, listener, secret, logger, links);
  std::string connect_timeout;  // the first connect-side timeout, if any
  {
    // If connecting throws, the jthread's destructor asks the acceptor to stop and joins it.
    std::jthread accepting([&acceptor](std::stop_token stop) { acceptor.run(stop); });
    for (int peer = 0; peer < options.rank; ++peer) {
      try {
        links[peer] = connect_to(options, peer, secret, logger);
      } catch (const TimeoutError& e) {
        connect_timeout = e.what();
        break;  // the deadline has passed: the other lower ranks would time out too
      }
    }
    accepting.join();
  }
  if (acceptor.failure()) std::rethrow_exception(acceptor.failure());

  std::vector<int> unreached;
  for (int peer = 0; peer < options.rank; ++peer) {
    if (!links[peer]) unreached.push_back(peer);
  }
  const std::vector<int> never_connected = acceptor.missing();
  if (unreached.empty() && never_connected.empty()) return links;

  std::string message = fmt::format("rank {} of {}: connection mesh incomplete at the deadline",
                                    options.rank, options.size);
  if (!unreached.empty()) {
    message += fmt::format("; could not connect to rank(s) {} ({})", join_ranks(unreached),
                           connect_timeout);
  }
  if (!never_connected.empty()) {
    message += fmt::format("; rank(s) {} never connected to this rank (listening on port {})",
                           join_ranks(never_connected), local_port(listener));
  }
  throw TimeoutError(message);
}

}  // namespace kolo::transport
