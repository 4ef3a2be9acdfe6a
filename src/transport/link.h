// transport::Link: an ordered, reliable byte stream to one peer. TCP (tcp/), Unix socket pairs
// (tests) and shared memory (shm/) implement it. Algorithms see only this interface and
// drive it without blocking, so a ring step can send and receive at once and never deadlock on
// full kernel buffers; comm::Communicator owns the waiting.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "base/bytes.h"

namespace kolo::transport {

class Link {
 public:
  Link() = default;
  virtual ~Link() = default;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Moves as many bytes as possible without blocking and returns how many (0: would block).
  // Throws kolo::PeerError naming the peer when it closed the stream or the link broke.
  virtual size_t send_some(ConstBytes data) = 0;
  virtual size_t recv_some(Bytes data) = 0;

  // A file descriptor that poll(2) reports readable/writable when the link may progress and
  // POLLRDHUP/POLLHUP when the peer went away; -1 if the link must be polled by spinning.
  [[nodiscard]] virtual int fd() const = 0;

  // Waiting, in two steps so that a wait on many links pays one fence, not one per link
  // (transport::WaitArming runs them; wait_fence.h says why a fence). arm_wait() is called just
  // before the communicator sleeps in poll(2) on fd() because this link wants to send and/or
  // receive but cannot move. It returns the poll events that mean the link may progress, or
  // negative events if it can progress already (do not sleep). A socket waits for POLLIN /
  // POLLOUT; a shared-memory link asks its peer to ring fd() when it moves and waits for POLLIN,
  // and may set check_after_fence: then, after every link of this wait was armed, one
  // wait_fence() must be issued and ready_after_fence() asked before anyone sleeps.
  struct WaitArm {
    int events;
    bool check_after_fence;
  };
  [[nodiscard]] virtual WaitArm arm_wait(bool want_send, bool want_recv);
  // Whether the link can progress already, asked after the fence (only if arm_wait asked).
  [[nodiscard]] virtual bool ready_after_fence() const { return false; }

  // True if bytes the peer sent are waiting to be read (checked without consuming them): a peer
  // that hung up after sending them is not yet an error.
  [[nodiscard]] virtual bool has_pending_input() const;

  // Whether the ranks of this host outnumber its CPUs (the communicator tells every link). A
  // link may then avoid waiting for its peer where it could go on: the peer may need this core.
  virtual void set_oversubscribed(bool /*oversubscribed*/) {}

  // The rank on the other end (in the world numbering) and a description for error messages,
  // e.g. "rank 2 (127.0.0.1:40123)".
  [[nodiscard]] virtual int peer_rank() const = 0;
  [[nodiscard]] virtual const std::string& peer_description() const = 0;

  // Stops all traffic so the peer sees the link closed; idempotent.
  virtual void close() = 0;
};

}  // namespace kolo::transport
