// comm::Communicator: a group of ranks with a Link to each peer, and the one place that waits for
// links to make progress. Every collective algorithm is a free function over a Communicator.
//
// Waiting: transfers are driven with Link::send_some/recv_some; when none can progress the
// communicator polls the links' fds together with POLLRDHUP on *every* peer, so a rank killed
// anywhere in the group is noticed at once even by ranks not talking to it. If nothing moves for
// `peer_timeout`, the wait fails with a PeerError naming the peers it was waiting on.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/errors.h"
#include "comm/step_parts.h"
#include "transport/link.h"
#include "transport/wait_arming.h"

namespace kolo::comm {

struct CollectiveArena;

using transport::Link;

// Which ranks share a host; filled from the rendezvous (host identity), used for topology-aware
// algorithms (shared memory, hierarchical).
struct Topology {
  std::vector<int> host_of_rank;  // host index per rank, hosts numbered by first appearance
  // This rank's host's shared-memory arena (null: none), set up at bootstrap; see
  // collective_arena.h for when a communicator may use it.
  std::shared_ptr<CollectiveArena> host_arena;

  [[nodiscard]] int num_hosts() const;
  [[nodiscard]] std::vector<int> ranks_on_host(int host) const;
  // A topology where every rank is on its own host (size ranks) or all on one (one_host=true).
  static Topology flat(int size, bool one_host);
};

struct SendOp {
  int peer;
  ConstBytes data;
};
struct RecvOp {
  int peer;
  Bytes data;
};

struct CommunicatorOptions {
  std::chrono::milliseconds peer_timeout{30000};
  // Largest control frame accepted from a peer (negotiation messages).
  uint64_t frame_limit = 256ull << 20;
  // How long a wait keeps retrying the links before sleeping in poll(2): a small message from a
  // busy peer is usually a few microseconds away, and a poll wake-up costs more than that.
  std::chrono::microseconds spin_before_poll{20};
  // CPUs of this host, to tell whether its ranks outnumber them; 0: ask the system.
  int host_cpus = 0;
  // Ranks of the whole job on this rank's host (0: this group's ranks there). Oversubscription
  // is the host's: a subgroup (a process set, a hierarchical stage) passes its parent's count,
  // so that it sees the host as busy as it is and tells the links it shares with its parent
  // the same as the parent did.
  int host_ranks = 0;
};

class Communicator {
 public:
  // links[r] is the link to peer r (null for r == rank). Links are borrowed: the owner (the
  // runtime's mesh) outlives the communicator.
  Communicator(int rank, std::vector<Link*> links, Topology topology, CommunicatorOptions options);

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return static_cast<int>(links_.size()); }
  [[nodiscard]] const Topology& topology() const { return topology_; }
  [[nodiscard]] const CommunicatorOptions& options() const { return options_; }
  Link& peer(int r);

  // The host arena when this communicator's ranks are exactly its members (null otherwise).
  [[nodiscard]] CollectiveArena* arena() const {
    return arena_usable_ ? topology_.host_arena.get() : nullptr;
  }
  // More ranks on this host than it has CPUs: waits yield the CPU at once.
  [[nodiscard]] bool oversubscribed() const { return oversubscribed_; }
  // Ranks of the job on this rank's host (CommunicatorOptions::host_ranks, or counted).
  [[nodiscard]] int host_ranks() const { return host_ranks_; }
  // A work buffer of at least `bytes`, owned by the communicator (and shared with its
  // subgroups) and reused by every call: valid until the next scratch() call.
  Bytes scratch(size_t bytes);
  // Lets a subgroup reuse this communicator's scratch buffer and helper threads (they never run
  // at once).
  void share_workspace_with(Communicator& subgroup) const {
    subgroup.scratch_ = scratch_;
    subgroup.helpers_ = helpers_;
  }
  // Helper threads that share a large collective's copies and folds (comm/work_splitter.h; null:
  // this thread alone), in parts of at least `part_bytes` (tests lower it); borrowed: the owner
  // (the runtime's core::ReduceHelpers) resets it before it goes. Seen by the subgroups too.
  void set_work_splitter(WorkSplitter* splitter, size_t part_bytes = kSplitPartBytes) {
    *helpers_ = {splitter, part_bytes};
  }
  [[nodiscard]] WorkSplitter* work_splitter() const { return helpers_->splitter; }
  [[nodiscard]] size_t split_part_bytes() const { return helpers_->part_bytes; }
  // Throws PeerError for the first of `peers` whose link reports a hang-up (without waiting).
  void check_alive(std::span<const int> peers);

  // Runs all transfers concurrently until every one completed. Throws PeerError on a broken or
  // silent peer (see above). Zero-length transfers complete at once.
  void exchange(std::span<const SendOp> sends, std::span<const RecvOp> recvs);
  void send(int peer, ConstBytes data);
  void recv(int peer, Bytes data);
  void send_recv(int to, ConstBytes out, int from, Bytes in);

  // Length-prefixed messages (checked against options().frame_limit).
  void send_frame(int peer, ConstBytes data);
  std::vector<std::byte> recv_frame(int peer);

  // Idle wait for the runtime's background thread: returns when `wake_fd` is readable or
  // `timeout` passed; throws PeerError if any peer hung up meanwhile. wake_fd may be -1. With
  // `wake_on_bytes` it also returns when a peer sends bytes (it started the next cycle over the
  // links); without, the links are watched for hang-ups only, which spares arming them for a
  // read and the wait fence (a membarrier(2)) that shared-memory links then ask for: for a
  // caller whose peers reach it through the host arena, which sends no bytes
  // (small_allreduce_uses_arena).
  void wait_idle(int wake_fd, std::chrono::microseconds timeout, bool wake_on_bytes = true);
  // The idle wait of a background thread while another thread may be running collectives on
  // this communicator (a caller driving its own cycles, core/session.h): it polls `wake_fd` and
  // the links' descriptors for hang-ups only, and touches no link's state (no arming, no
  // doorbell drained), so it may run beside any collective. True when a peer hung up (the next
  // collective reports it, naming the peer), false when woken or timed out.
  [[nodiscard]] bool wait_wake_or_hangup(int wake_fd, std::chrono::microseconds timeout) const;
  // The first peer whose link hung up, as the error a collective would raise, without waiting
  // and touching no link's state (as above); nullopt when none. For waits outside kolo's own
  // transfers that need every peer alive whatever bytes it left behind (an NCCL collective).
  [[nodiscard]] std::optional<PeerError> hung_up_peer() const;

  // Closes every link so that peers see this rank gone (after a fatal error).
  void abort();

  // After the job agreed to shut down, ranks leave at different moments: from then on only the
  // peers a transfer involves are watched, so a rank that left cleanly is not reported as dead.
  void stop_watching_uninvolved_peers() { watch_all_peers_ = false; }
  [[nodiscard]] bool watching_all_peers() const { return watch_all_peers_; }

  // Wait fences (transport/wait_fence.h) this communicator's waits issued: one per sleep at
  // most, however many shared-memory links it waits on (tests count them).
  [[nodiscard]] uint64_t wait_fences() const { return wait_arming_.fences(); }

 private:
  int rank_;
  std::vector<Link*> links_;
  Topology topology_;
  CommunicatorOptions options_;
  bool watch_all_peers_ = true;
  bool arena_usable_ = false;
  bool oversubscribed_ = false;
  int host_ranks_ = 1;
  // Arms the links before each sleep in poll(2) (exchange and wait_idle).
  transport::WaitArming wait_arming_;
  struct Scratch {
    std::unique_ptr<std::byte[]> data;
    size_t size = 0;
  };
  std::shared_ptr<Scratch> scratch_ = std::make_shared<Scratch>();
  struct Helpers {
    WorkSplitter* splitter = nullptr;
    size_t part_bytes = kSplitPartBytes;
  };
  std::shared_ptr<Helpers> helpers_ = std::make_shared<Helpers>();
  // exchange()'s working lists (defined in exchange.cc), kept from call to call so that a call
  // allocates nothing once they have grown: a small broadcast takes about 0.1 us, and building
  // them afresh (four heap allocations) was a large part of it.
  struct ExchangeLists;
  // exchange() without its fast path for a lone transfer.
  void exchange_loop(std::span<const SendOp> sends, std::span<const RecvOp> recvs);
  struct ExchangeListsDeleter {
    void operator()(ExchangeLists* lists) const;
  };
  std::unique_ptr<ExchangeLists, ExchangeListsDeleter> exchange_lists_;
};

}  // namespace kolo::comm
