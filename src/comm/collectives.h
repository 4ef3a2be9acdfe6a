// The collective algorithms, written against Communicator only. Buffers are raw bytes plus an
// element count and a DataType; no names, no frameworks. All ranks of the communicator must call
// the same function with compatible arguments (negotiation guarantees it). Every function is
// correct for any group size (1, 3, 5, ...) and for zero elements, and gives bitwise identical
// results on every rank.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "base/types.h"
#include "comm/communicator.h"
#include "comm/piece_list.h"
#include "kernels/result_scale.h"

namespace kolo::comm {

enum class AllreduceAlgorithm {
  automatic,
  ring,
  recursive_doubling,
  halving_doubling,
  hierarchical,
  shared_memory
};
// HOROVOD_HIERARCHICAL_ALLREDUCE: automatic = on when ranks span several hosts and some host
// runs more than one of them.
enum class Hierarchical { automatic, on, off };

struct AllreduceOptions {
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::automatic;
  // automatic: below this many bytes recursive doubling (latency-bound), else ring (bandwidth);
  // the limit of groups up to 4 ranks, larger ones scale it (allreduce_choice.h).
  size_t small_message_bytes = size_t{64} * 1024;
  Hierarchical hierarchical = Hierarchical::automatic;
};

// In place: data holds count elements of `type`; on return every rank holds op over all ranks,
// with `scale` applied to it (once per element, by the rank that computes the element's total:
// kernels/result_scale.h). Every algorithm below takes the same `scale`.
void allreduce(Communicator& comm, Bytes data, size_t count, DataType type, ReduceOp op,
               const AllreduceOptions& options = {}, const kernels::ResultScale& scale = {});
// Whether allreduce() with default options takes the host arena for a small message (a
// negotiation cycle's first step): then a peer that starts a cycle sends this rank no bytes.
[[nodiscard]] bool small_allreduce_uses_arena(const Communicator& comm);
// Through the host arena: whether another member already entered this rank's next collective
// step (posted its `ready` for it), so it waits for this rank there: a peer's negotiation cycle
// began. No bytes tell a rank that (the arena sends none). False when the group has no arena.
[[nodiscard]] bool arena_member_started_next_step(const Communicator& comm);
void allreduce_ring(Communicator& comm, Bytes data, size_t count, DataType type, ReduceOp op,
                    const kernels::ResultScale& scale = {});
void allreduce_recursive_doubling(Communicator& comm, Bytes data, size_t count, DataType type,
                                  ReduceOp op, const kernels::ResultScale& scale = {});
// Recursive-halving reduce-scatter + recursive-doubling allgather (Rabenseifner): the ring's
// bandwidth in 2 log2(size) steps.
void allreduce_halving_doubling(Communicator& comm, Bytes data, size_t count, DataType type,
                                ReduceOp op, const kernels::ResultScale& scale = {});
// Inside each host, then across hosts, then inside each host again (see the .cc); `options`
// choose the flat algorithm of each stage.
void allreduce_hierarchical(Communicator& comm, Bytes data, size_t count, DataType type,
                            ReduceOp op, const AllreduceOptions& options = {},
                            const kernels::ResultScale& scale = {});
// Every rank of the group on one host, reading the peers' buffers from their memory in three
// flag rounds (comm/single_copy.h); needs the host arena and single copies usable
// (detail::single_copy_usable said so on every rank). Each element is folded in rank order, so
// every rank gets the same bits.
void allreduce_single_copy(Communicator& comm, Bytes data, size_t count, DataType type, ReduceOp op,
                           const kernels::ResultScale& scale = {});
// Every rank of the group on one host: through the host's shared-memory arena (see the .cc).
// Throws InvalidArgument when the group has no usable arena (Communicator::arena()).
void allreduce_shared_memory(Communicator& comm, Bytes data, size_t count, DataType type,
                             ReduceOp op, const kernels::ResultScale& scale = {});
// The same over the concatenation of several tensors (each reads its input, its result goes to its
// output), with no buffer to pack them into: a fused allreduce's data path on one host.
void allreduce_shared_memory(Communicator& comm, const PieceList& pieces, DataType type,
                             ReduceOp op, const kernels::ResultScale& scale = {});
// Whether allreduce() with `options` runs `bytes` through the host arena (the choice every rank
// makes alike, from the group and the size).
[[nodiscard]] bool allreduce_takes_arena(const Communicator& comm, size_t bytes,
                                         const AllreduceOptions& options);
// True when the topology has several hosts and fewer hosts than ranks.
bool hierarchical_applies(const Communicator& comm);

// Concatenates every rank's block in rank order. bytes_per_rank[r] is rank r's block size;
// `mine` has bytes_per_rank[rank] bytes; out has their sum. `mine` may be this rank's block of
// `out` itself. Through the host arena when the group is one host's ranks, else, for small totals,
// recursive doubling on powers of two from 4 ranks and Bruck's algorithm on other sizes from 5
// (allgather_choice.h), else a ring.
void allgatherv(Communicator& comm, ConstBytes mine, Bytes out,
                std::span<const size_t> bytes_per_rank);
void allgatherv_ring(Communicator& comm, ConstBytes mine, Bytes out,
                     std::span<const size_t> bytes_per_rank);
void allgatherv_doubling(Communicator& comm, ConstBytes mine, Bytes out,
                         std::span<const size_t> bytes_per_rank);
void allgatherv_bruck(Communicator& comm, ConstBytes mine, Bytes out,
                      std::span<const size_t> bytes_per_rank);
// The shared-memory forms below throw InvalidArgument, as allreduce_shared_memory, when the group
// has no usable arena.
void allgatherv_shared_memory(Communicator& comm, ConstBytes mine, Bytes out,
                              std::span<const size_t> bytes_per_rank);

// Every rank's `data` holds sum(counts) elements; rank r receives, in `out` (counts[r]
// elements), op over all ranks of block r (blocks in rank order, uneven sizes allowed). `data`
// is the work area: its contents may be clobbered. `out` may be this rank's block of `data`.
void reducescatter(Communicator& comm, Bytes data, std::span<const size_t> counts, DataType type,
                   ReduceOp op, Bytes out);
void reducescatter_ring(Communicator& comm, Bytes data, std::span<const size_t> counts,
                        DataType type, ReduceOp op, Bytes out);
void reducescatter_shared_memory(Communicator& comm, Bytes data, std::span<const size_t> counts,
                                 DataType type, ReduceOp op, Bytes out);

// `in` holds one block per destination (send_bytes[r] bytes for rank r, in rank order); `out`
// receives one block per source (recv_bytes[r] from rank r). send_bytes[rank] == recv_bytes[rank].
void alltoallv(Communicator& comm, ConstBytes in, std::span<const size_t> send_bytes, Bytes out,
               std::span<const size_t> recv_bytes);
void alltoallv_pairwise(Communicator& comm, ConstBytes in, std::span<const size_t> send_bytes,
                        Bytes out, std::span<const size_t> recv_bytes);
void alltoallv_shared_memory(Communicator& comm, ConstBytes in, std::span<const size_t> send_bytes,
                             Bytes out, std::span<const size_t> recv_bytes);

// Root's data ends up on every rank: through the host arena when the group is one host's
// ranks, else a pipelined chain for large buffers, scatter + allgather for medium ones on 8+
// ranks (broadcast_choice.h), or a binomial tree.
void broadcast(Communicator& comm, Bytes data, int root);
void broadcast_tree(Communicator& comm, Bytes data, int root);
void broadcast_chain(Communicator& comm, Bytes data, int root);
void broadcast_scatter_allgather(Communicator& comm, Bytes data, int root);
void broadcast_shared_memory(Communicator& comm, Bytes data, int root);
// The receivers read the root's buffer from its memory in one step (comm/single_copy.h); needs
// the host arena and single copies usable (detail::single_copy_usable said so on every rank).
void broadcast_single_copy(Communicator& comm, Bytes data, int root);

// Returns once every rank has entered.
void barrier(Communicator& comm);

// Control-message helpers for negotiation: root receives every rank's frame (index = rank; its
// own is copied); other ranks get an empty vector.
std::vector<std::vector<std::byte>> gather_frames(Communicator& comm, ConstBytes mine, int root);
// Root's frame is delivered to every rank (tree); `data` is root's input, ignored elsewhere.
std::vector<std::byte> broadcast_frame(Communicator& comm, std::vector<std::byte> data, int root);

}  // namespace kolo::comm
