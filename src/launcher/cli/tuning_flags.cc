#include "launcher/cli/tuning_flags.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "base/errors.h"

namespace kolo::launcher {

namespace {

using Kind = TuningFlag::ValueKind;
using Effect = TuningFlag::Effect;

// Help texts follow horovodrun's so `kolorun --help` reads like `horovodrun --help`.
constexpr std::array kFlags{
    TuningFlag{"--fusion-threshold-mb", "FUSION_THRESHOLD", Kind::megabytes_to_bytes,
               "Fusion buffer threshold in MB. This is the maximum amount of tensor data that can "
               "be fused together into a single batch during allreduce / allgather. Setting 0 "
               "disables tensor fusion. (default: 128)"},
    TuningFlag{"--cycle-time-ms", "CYCLE_TIME", Kind::non_negative_number,
               "Cycle time in ms. This is the delay between each tensor fusion cycle. The larger "
               "the cycle time, the more batching, but the greater latency between each allreduce "
               "/ allgather operations. (default: 1)"},
    TuningFlag{"--cache-capacity", "CACHE_CAPACITY", Kind::non_negative_integer,
               "Maximum number of tensor names that will be cached to reduce amount of "
               "coordination required between workers before performing allreduce / allgather. "
               "(default: 1024)"},
    TuningFlag{"--timeline-filename", "TIMELINE", Kind::path,
               "JSON file containing timeline of Horovod events used for debugging performance. "
               "If this is provided, timeline events will be recorded, which can have a negative "
               "impact on training performance. (kolo: rank 0 writes it)"},
    TuningFlag{"--timeline-mark-cycles", "TIMELINE_MARK_CYCLES", Kind::switch_on,
               "Mark cycles on the timeline. Only enabled if the timeline filename is provided."},
    TuningFlag{"--autotune", "AUTOTUNE", Kind::switch_on,
               "Perform autotuning to select parameter argument values that maximize throughput "
               "for allreduce / allgather. Any parameter explicitly set will be held constant "
               "during tuning."},
    TuningFlag{"--autotune-log-file", "AUTOTUNE_LOG", Kind::path,
               "Comma-separated log of trials containing each hyperparameter and the score of the "
               "trial. The last row will always contain the best value found."},
    TuningFlag{"--autotune-warmup-samples", "AUTOTUNE_WARMUP_SAMPLES", Kind::non_negative_integer,
               "Number of samples to discard before beginning the optimization process during "
               "autotuning. (default: 3)"},
    TuningFlag{"--autotune-steps-per-sample", "AUTOTUNE_STEPS_PER_SAMPLE",
               Kind::non_negative_integer,
               "Number of steps (approximate) to record before observing a sample. The sample "
               "score is defined to be the median score over all batches within the sample. "
               "(default: 10)"},
    TuningFlag{"--no-stall-check", "STALL_CHECK_DISABLE", Kind::switch_on,
               "Disable the stall check. The stall check will log a warning when workers have "
               "stalled waiting for other ranks to submit tensors."},
    TuningFlag{"--stall-check-warning-time-seconds", "STALL_CHECK_TIME_SECONDS",
               Kind::non_negative_number,
               "Seconds until the stall warning is logged to stderr. (default: 60)"},
    TuningFlag{"--stall-check-shutdown-time-seconds", "STALL_SHUTDOWN_TIME_SECONDS",
               Kind::non_negative_number,
               "Seconds until Horovod is shutdown due to stall. Shutdown will only take place if "
               "this value is greater than the warning time. (default: 0)"},
    TuningFlag{"--stall-check", "STALL_CHECK_DISABLE", Kind::switch_off,
               "Keep the stall check on (the default; undoes --no-stall-check)."},
    TuningFlag{"--no-autotune", "AUTOTUNE", Kind::switch_off, "Do not autotune (the default)."},
    TuningFlag{"--no-timeline-mark-cycles", "TIMELINE_MARK_CYCLES", Kind::switch_off,
               "Do not mark cycles on the timeline (the default)."},
    TuningFlag{"--hierarchical-allreduce", "HIERARCHICAL_ALLREDUCE", Kind::switch_on,
               "Allreduce within each host first, then across hosts, then within each host again. "
               "(default: on with several hosts that run several ranks each; CUDA tensors: off)"},
    TuningFlag{"--no-hierarchical-allreduce", "HIERARCHICAL_ALLREDUCE", Kind::switch_off,
               "Allreduce over all ranks at once, also with several hosts."},
    TuningFlag{"--hierarchical-allgather", "HIERARCHICAL_ALLGATHER", Kind::switch_on,
               "Accepted for horovodrun compatibility; kolo has no hierarchical allgather.",
               Effect::not_in_kolo,
               "kolo has no hierarchical allgather: allgather runs over all ranks at once "
               "(shared memory between the ranks of a host)"},
    TuningFlag{"--no-hierarchical-allgather", "HIERARCHICAL_ALLGATHER", Kind::switch_off,
               "Allgather over all ranks at once (what kolo always does).",
               Effect::kolos_way_already},
    TuningFlag{"--torus-allreduce", "TORUS_ALLREDUCE", Kind::switch_on,
               "Accepted for horovodrun compatibility; kolo has no torus allreduce.",
               Effect::not_in_kolo,
               "kolo has no torus allreduce (an NCCL algorithm); with several hosts kolo runs its "
               "hierarchical allreduce (--hierarchical-allreduce) instead"},
    TuningFlag{"--no-torus-allreduce", "TORUS_ALLREDUCE", Kind::switch_off,
               "No torus allreduce (what kolo always does).", Effect::kolos_way_already},
    TuningFlag{"--autotune-bayes-opt-max-samples", "AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
               Kind::non_negative_integer,
               "Accepted for horovodrun compatibility; kolo's autotune does not use Bayesian "
               "optimisation.",
               Effect::not_in_kolo,
               "kolo's autotune is a coordinate descent over a fixed grid, not Bayesian "
               "optimisation; it is steered by --autotune-warmup-samples, "
               "--autotune-steps-per-sample and KOLO_AUTOTUNE_SAMPLES_PER_TRIAL"},
    TuningFlag{"--autotune-gaussian-process-noise", "AUTOTUNE_GAUSSIAN_PROCESS_NOISE",
               Kind::non_negative_number,
               "Accepted for horovodrun compatibility; kolo's autotune has no Gaussian process.",
               Effect::not_in_kolo,
               "kolo's autotune is a coordinate descent that scores each trial by the median of "
               "its samples, not a Gaussian process; set KOLO_AUTOTUNE_SAMPLES_PER_TRIAL for "
               "noisy measurements"},
    TuningFlag{"--mpi-threads-disable", "MPI_THREADS_DISABLE", Kind::switch_on,
               "Accepted for horovodrun compatibility; kolo's MPI plugin needs MPI threads.",
               Effect::not_in_kolo,
               "kolo (with --mpi) always initializes MPI with MPI_THREAD_MULTIPLE (or keeps what "
               "mpi4py set up), since its background thread makes the MPI calls"},
    TuningFlag{"--no-mpi-threads-disable", "MPI_THREADS_DISABLE", Kind::switch_off,
               "MPI with thread support (what kolo always asks for).", Effect::kolos_way_already},
    TuningFlag{"--num-nccl-streams", "NUM_NCCL_STREAMS", Kind::non_negative_integer,
               "Accepted for horovodrun compatibility; kolo runs NCCL on one stream of its own.",
               Effect::not_in_kolo,
               "kolo runs NCCL collectives on one stream of its own, ordered by events against "
               "the caller's stream, so there is no stream count to set"},
    TuningFlag{"--thread-affinity", "THREAD_AFFINITY", Kind::non_negative_integer,
               "Core to pin kolo's background thread to (the variable takes one core per local "
               "rank, e.g. HOROVOD_THREAD_AFFINITY=0,1; as in Horovod a host running more ranks "
               "than cores listed pins nothing and says so)."},
    TuningFlag{"--bind-to", "BIND_TO", Kind::path,
               "Where each local rank may run: core (the default: its own share of the CPUs "
               "kolorun may use, with its threads and OMP_NUM_THREADS to match) or none (every "
               "rank on all of them, as horovodrun)."},
    TuningFlag{"--gloo-timeout-seconds",
               "GLOO_TIMEOUT_SECONDS",
               Kind::non_negative_number,
               "Timeout in seconds for collective operations to complete: kolo's peer timeout, a "
               "peer that makes no progress for this long fails every pending op. (default: 30)",
               Effect::drives_kolo,
               {},
               "PEER_TIMEOUT"},
    TuningFlag{"--log-with-timestamp", "LOG_HIDE_TIME", Kind::switch_off,
               "Show a timestamp on kolo's log messages."},
    TuningFlag{"--log-without-timestamp", "LOG_HIDE_TIME", Kind::switch_on,
               "Hide the timestamp from kolo's log messages (kolo's default)."},
    TuningFlag{"--log-hide-timestamp", "LOG_HIDE_TIME", Kind::switch_on,
               "Deprecated horovodrun spelling of --log-without-timestamp."},
    TuningFlag{"--no-log-hide-timestamp", "LOG_HIDE_TIME", Kind::switch_off,
               "Deprecated horovodrun spelling of --log-with-timestamp."},
};

InvalidArgument bad_value(const TuningFlag& flag, const std::string& text, const char* expected) {
  return InvalidArgument(
      fmt::format("{} {}: expected {}", flag.flag, text.empty() ? "''" : text, expected));
}

uint64_t parse_integer(const TuningFlag& flag, const std::string& text) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw bad_value(flag, text, "a non-negative integer");
  }
  return value;
}

double parse_number(const TuningFlag& flag, const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < 0) {
    throw bad_value(flag, text, "a non-negative number");
  }
  return value;
}

bool parse_switch(const TuningFlag& flag, const std::string& text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return false;
  throw bad_value(flag, text, "true or false");
}

}  // namespace

std::span<const TuningFlag> tuning_flags() { return kFlags; }

const TuningFlag* find_tuning_flag(std::string_view flag) {
  for (const TuningFlag& row : kFlags) {
    if (row.flag == flag) return &row;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> tuning_flag_environment(const TuningFlag& flag,
                                                                         const std::string& text) {
  std::string value;
  switch (flag.kind) {
    case Kind::non_negative_integer:
      value = std::to_string(parse_integer(flag, text));
      break;
    case Kind::non_negative_number:
      value = fmt::format("{}", parse_number(flag, text));
      break;
    case Kind::megabytes_to_bytes: {
      uint64_t megabytes = parse_integer(flag, text);
      if (megabytes > (UINT64_MAX >> 20)) throw bad_value(flag, text, "a smaller number of MB");
      value = std::to_string(megabytes << 20);
      break;
    }
    case Kind::path:
      if (text.empty()) throw bad_value(flag, text, "a file name");
      value = text;
      break;
    case Kind::switch_on:
      value = parse_switch(flag, text) ? "1" : "0";
      break;
    case Kind::switch_off:
      value = parse_switch(flag, text) ? "0" : "1";
      break;
  }
  // Horovod's name always (scripts and tools may read it); KOLO_* only where kolo acts on the
  // setting, so the flag also beats a KOLO_* variable the user happens to have exported (kolo
  // reads KOLO_* first), and kolo never warns about a KOLO_* name it does not know.
  std::vector<std::pair<std::string, std::string>> environment;
  if (flag.effect == Effect::drives_kolo) {
    const std::string_view kolo_setting =
        flag.kolo_setting.empty() ? flag.setting : flag.kolo_setting;
    environment.emplace_back("KOLO_" + std::string(kolo_setting), value);
  }
  environment.emplace_back("HOROVOD_" + std::string(flag.setting), value);
  return environment;
}

}  // namespace kolo::launcher
