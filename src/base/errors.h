// The one error model: every failure inside kolo is a kolo::Error (or a subclass) carrying a
// message that names where it came from (rank, peer, tensor, operation). The background loop
// catches them and fails the affected handles; only src/python converts them to Python exceptions.
#pragma once

#include <stdexcept>
#include <string>

namespace kolo {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A peer closed its connection, died, or stopped making progress. `peer_rank` is -1 when unknown.
class PeerError : public Error {
 public:
  // closed: the connection ended (process exited or was killed). silent: the peer is connected
  // but sent nothing for the peer timeout (hung, stopped, or itself waiting on someone else).
  enum class Kind { closed, silent };

  PeerError(int peer_rank, const std::string& message, Kind kind = Kind::closed)
      : Error(message), peer_rank_(peer_rank), kind_(kind) {}
  [[nodiscard]] int peer_rank() const { return peer_rank_; }
  [[nodiscard]] Kind kind() const { return kind_; }

 private:
  int peer_rank_;
  Kind kind_;
};

// Something did not happen in time (rendezvous key, connection, handshake).
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// Bytes on the wire that break the protocol: bad frame length, failed authentication, bad message.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

// A backend lacks an operation, or an element type or reduction for it (e.g. the MPI plugin has
// no reduction for some type). Raised before any byte moved and decided the same way on every rank
// (they all run the same backend on the same agreed response), so the executor fails only those
// tensors and the session goes on. (Ranks that disagree about a collective are not an exception:
// the coordinator answers with an error response that fails the tensor on every rank.)
class UnsupportedOperation : public Error {
 public:
  using Error::Error;
};

// Bad configuration value or bad argument from the user.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// An operating-system call failed: message carries the call, errno text and context.
class SystemError : public Error {
 public:
  SystemError(const std::string& call, int err, const std::string& context);
  [[nodiscard]] int error_code() const { return error_code_; }

 private:
  int error_code_;
};

}  // namespace kolo
