// Writes the binary seed inputs of the fuzz targets with kolo's own encoders, so the seeds are
// exactly what real peers send: `fuzz_make_seeds fuzz/corpus` (scripts/fuzz.sh --seeds). Text
// seeds (hostfiles, config files, Slurm values) are written by hand and live beside these.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <span>

#include "launcher/spawn/agent_protocol.h"
#include "negotiation/wire.h"
#include "rendezvous/store_protocol.h"
#include "transport/tcp/framing.h"

namespace {

using namespace kolo;
namespace fs = std::filesystem;

void write_seed(const fs::path& dir, const std::string& name, std::string_view bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(bytes.data(), std::ssize(bytes));
}

std::string as_string(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string framed(std::string_view payload) {
  std::byte header[transport::kFrameHeaderSize];
  transport::encode_frame_header(payload.size(), header);
  return std::string(reinterpret_cast<const char*>(header), sizeof(header)) + std::string(payload);
}

void negotiation_seeds(const fs::path& dir) {
  using namespace negotiation;
  Request allreduce;
  allreduce.name = "layer1.weight";
  allreduce.shape = {64, 3, 3};
  allreduce.reduce_op = UserReduceOp::average;
  Request alltoall = allreduce;
  alltoall.name = "tokens";
  alltoall.op = OpType::alltoall;
  alltoall.shape = {6, 4};
  alltoall.splits = {2, 4};
  Request grouped = allreduce;
  grouped.name = "group.0";
  grouped.group_id = 7;
  grouped.group_size = 2;
  grouped.prescale = 0.5;
  write_seed(dir, "encoded-requests-empty", as_string(encode(RequestList{})));
  write_seed(dir, "encoded-requests-allreduce", as_string(encode(RequestList{{allreduce}, false})));
  write_seed(dir, "encoded-requests-mixed",
             as_string(encode(RequestList{{allreduce, alltoall, grouped}, true})));

  Response gathered;
  gathered.op = OpType::allgather;
  gathered.names = {"features"};
  gathered.first_dims = {3, 5};
  gathered.shape = {3, 8};
  Response failed;
  failed.names = {"bias"};
  failed.error = "Mismatched shapes: rank 0 has [2], rank 1 has [3]";
  Response fused;
  fused.names = {"a", "b", "c"};
  fused.splits = {1, 1, 1, 1};
  ResponseList tuned{{fused}, false, {}, TunedParameters{2.5, 64u << 20, true, false}};
  write_seed(dir, "encoded-responses-empty", as_string(encode(ResponseList{})));
  write_seed(dir, "encoded-responses-mixed",
             as_string(encode(ResponseList{{gathered, failed, fused}, false, {}, std::nullopt})));
  write_seed(dir, "encoded-responses-tuned", as_string(encode(tuned)));
  write_seed(dir, "encoded-responses-shutdown",
             as_string(encode(ResponseList{{failed}, true, {1, 2}, std::nullopt})));
}

std::vector<rendezvous::wire::Request> store_requests() {
  using rendezvous::wire::Op;
  return {{Op::set, {"rank/0/addr"}, "10.0.0.1:4242", 0, 0},
          {Op::get, {"rank/1/addr"}, "", 0, 30000},
          {Op::add, {"barrier/init"}, "", 1, 0},
          {Op::wait, {"rank/0/addr", "rank/1/addr", "rank/2/addr"}, "", 0, 5000}};
}

void store_seeds(const fs::path& protocol_dir, const fs::path& connection_dir) {
  using rendezvous::wire::Reply;
  using rendezvous::wire::ReplyKind;
  const char* op_names[] = {"set", "get", "add", "wait"};
  std::string pipelined;
  int i = 0;
  for (const auto& request : store_requests()) {
    const std::string payload = rendezvous::wire::encode(request);
    write_seed(protocol_dir, std::string("encoded-request-") + op_names[i], payload);
    write_seed(connection_dir, std::string("encoded-authenticated-") + op_names[i],
               "\x01" + framed(payload));
    pipelined += framed(payload);
    ++i;
  }
  write_seed(connection_dir, "encoded-authenticated-pipelined", "\x01" + pipelined);
  write_seed(connection_dir, "unauthenticated-proof", std::string(1, '\0') + std::string(64, 'p'));
  const std::pair<const char*, Reply> replies[] = {
      {"ok", Reply{ReplyKind::ok, "", 0, {}}},
      {"value", Reply{ReplyKind::value, "10.0.0.1:4242", 0, {}}},
      {"number", Reply{ReplyKind::number, "", 3, {}}},
      {"timeout", Reply{ReplyKind::timeout, "", 0, {"rank/2/addr"}}},
      {"error", Reply{ReplyKind::error, "key too long", 0, {}}},
  };
  for (const auto& [name, reply] : replies) {
    write_seed(protocol_dir, std::string("encoded-reply-") + name, rendezvous::wire::encode(reply));
  }
}

void frame_seeds(const fs::path& dir) {
  write_seed(dir, "encoded-one-frame", framed("hello"));
  write_seed(dir, "encoded-empty-frame", framed(""));
  write_seed(dir, "encoded-two-frames", framed("first") + framed(std::string(100, 'x')));
  write_seed(dir, "encoded-truncated-frame", framed("truncated").substr(0, 12));
}

void agent_seeds(const fs::path& dir) {
  const launcher::Environment env = {{"HOROVOD_RANK", "1"},
                                     {"KOLO_SECRET", std::string(64, 'a')},
                                     {"PATH", "/usr/bin:/bin"},
                                     {"WITH_NEWLINE", "two\nlines"}};
  const std::string block = launcher::encode_agent_environment(env);
  write_seed(dir, "encoded-environment", block);
  write_seed(dir, "encoded-environment-signals",
             block + launcher::agent_signal_request(15) + launcher::agent_signal_request(9));
  write_seed(dir, "encoded-status-lines",
             launcher::agent_status_line(launcher::ExitStatus::exited_with(3)) +
                 launcher::agent_status_line(launcher::ExitStatus::killed_by(9)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds <corpus directory, e.g. fuzz/corpus>\n";
    return 2;
  }
  const fs::path corpus = argv[1];
  negotiation_seeds(corpus / "negotiation_wire");
  store_seeds(corpus / "store_protocol", corpus / "store_connection");
  frame_seeds(corpus / "frame_header");
  agent_seeds(corpus / "agent_protocol");
  return 0;
}
