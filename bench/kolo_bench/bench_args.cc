#include "bench_args.h"

#include <fmt/format.h>

#include <cstdlib>
#include <set>

#include "base/errors.h"

namespace kolo::bench {

namespace {

DataType parse_type(const std::string& text) {
  static const std::pair<const char*, DataType> kTypes[] = {
      {"float", DataType::float32},     {"float32", DataType::float32},
      {"double", DataType::float64},    {"float64", DataType::float64},
      {"half", DataType::float16},      {"float16", DataType::float16},
      {"bfloat16", DataType::bfloat16}, {"int32", DataType::int32},
      {"int", DataType::int32},         {"int64", DataType::int64},
      {"int8", DataType::int8},         {"uint8", DataType::uint8}};
  for (const auto& [name, type] : kTypes) {
    if (text == name) return type;
  }
  throw InvalidArgument("unknown type '" + text +
                        "' (-d float|double|half|bfloat16|int32|int64|int8|uint8)");
}

ReduceOp parse_op(const std::string& text) {
  if (text == "sum") return ReduceOp::sum;
  if (text == "prod") return ReduceOp::product;
  if (text == "min") return ReduceOp::min;
  if (text == "max") return ReduceOp::max;
  throw InvalidArgument("unknown op '" + text + "' (-o sum|prod|min|max)");
}

comm::AllreduceAlgorithm parse_algorithm(const std::string& text) {
  static const std::pair<const char*, comm::AllreduceAlgorithm> kAlgorithms[] = {
      {"auto", comm::AllreduceAlgorithm::automatic},
      {"ring", comm::AllreduceAlgorithm::ring},
      {"recursive_doubling", comm::AllreduceAlgorithm::recursive_doubling},
      {"halving_doubling", comm::AllreduceAlgorithm::halving_doubling},
      {"shared_memory", comm::AllreduceAlgorithm::shared_memory},
      {"hierarchical", comm::AllreduceAlgorithm::hierarchical}};
  std::string choices;  // the error lists them from the same table
  for (const auto& [name, algorithm] : kAlgorithms) {
    if (text == name) return algorithm;
    choices += (choices.empty() ? "" : "|") + std::string(name);
  }
  throw InvalidArgument("unknown allreduce algorithm '" + text + "' (-a " + choices + ")");
}

int parse_int(const std::string& flag, const std::string& text, int min_value) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value < min_value) {
    throw InvalidArgument(fmt::format("{} {}: expected an integer >= {}", flag, text, min_value));
  }
  return static_cast<int>(value);
}

}  // namespace

uint64_t parse_size(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  uint64_t unit = 1;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k")
    unit = 1ull << 10;
  else if (suffix == "M" || suffix == "m")
    unit = 1ull << 20;
  else if (suffix == "G" || suffix == "g")
    unit = 1ull << 30;
  else if (!suffix.empty())
    throw InvalidArgument("bad size '" + text + "' (e.g. 8, 64K, 256M)");
  if (end == text.c_str() || value < 0) throw InvalidArgument("bad size '" + text + "'");
  return static_cast<uint64_t>(value * static_cast<double>(unit));
}

std::string usage() {
  return "usage: kolorun -np N kolo-bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]\n"
         "                 [-d float|double|half|bfloat16|int32|int64|int8|uint8]\n"
         "                 [-o sum|prod|min|max] [-c 0|1]\n"
         "                 [-a auto|ring|recursive_doubling|halving_doubling|shared_memory|\n"
         "                     hierarchical] [-g auto|ring|doubling|bruck]\n"
         "                 [-t all|allreduce,allgather,broadcast,reducescatter,alltoall]\n";
}

BenchArgs parse_bench_args(int argc, char** argv) {
  BenchArgs args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") throw InvalidArgument(usage());
    if (i + 1 >= argc) throw InvalidArgument(flag + " needs a value\n" + usage());
    const std::string value = argv[++i];
    if (flag == "-b")
      args.min_bytes = parse_size(value);
    else if (flag == "-e")
      args.max_bytes = parse_size(value);
    else if (flag == "-f")
      args.factor = static_cast<uint64_t>(parse_int(flag, value, 2));
    else if (flag == "-n")
      args.iterations = parse_int(flag, value, 1);
    else if (flag == "-w")
      args.warmup = parse_int(flag, value, 0);
    else if (flag == "-d")
      args.type = parse_type(value);
    else if (flag == "-o")
      args.op = parse_op(value);
    else if (flag == "-a")
      args.algorithm = parse_algorithm(value);
    else if (flag == "-g") {
      static const std::set<std::string> allgathers = {"auto", "ring", "doubling", "bruck"};
      if (!allgathers.contains(value)) {
        throw InvalidArgument("unknown allgather algorithm '" + value +
                              "' (-g auto|ring|doubling|bruck)");
      }
      args.allgather_algorithm = value;
    } else if (flag == "-c")
      args.check = parse_int(flag, value, 0) != 0;
    else if (flag == "-t") {
      if (value == "all") continue;
      static const std::set<std::string> known = {"allreduce", "allgather", "broadcast",
                                                  "reducescatter", "alltoall"};
      args.collectives.clear();
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = std::min(value.find(',', start), value.size());
        const std::string name = value.substr(start, comma - start);
        if (!known.contains(name))
          throw InvalidArgument("unknown collective '" + name + "'\n" + usage());
        args.collectives.push_back(name);
        start = comma + 1;
      }
    } else {
      throw InvalidArgument("unknown flag " + flag + "\n" + usage());
    }
  }
  if (args.min_bytes > args.max_bytes) throw InvalidArgument("-b is larger than -e");
  return args;
}

}  // namespace kolo::bench
