#include "launcher/spawn/mpirun_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "base/errors.h"

namespace kolo::launcher {

namespace {

// Variables that describe this shell or an enclosing launch rather than the job: forwarding them
// would confuse the ranks' MPI (an outer OMPI_/PMIX_ job) or is meaningless on another host.
bool forwardable(const std::string& name) {
  static constexpr const char* kPrefixes[] = {"OMPI_", "PMIX_", "PMI_", "BASH_FUNC_", "SLURM_"};
  static constexpr const char* kNames[] = {"_",    "PWD",     "OLDPWD", "SHLVL", "HOSTNAME", "HOME",
                                           "USER", "LOGNAME", "SHELL",  "TERM",  "DISPLAY"};
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  for (const char* prefix : kPrefixes) {
    if (name.rfind(prefix, 0) == 0) return false;
  }
  return std::find(std::begin(kNames), std::end(kNames), name) == std::end(kNames);
}

}  // namespace

Environment mpirun_environment(const LaunchOptions& options, const Environment& inherited) {
  Environment env = inherited;
  // The backend is the point of --mpi; HOROVOD_* too, for scripts that check it.
  env["KOLO_CPU_OPERATIONS"] = "mpi";
  env["HOROVOD_CPU_OPERATIONS"] = "mpi";
  env["HOROVOD_CONTROLLER"] = "mpi";
  env["KOLO_START_TIMEOUT"] = format_seconds(options.start_timeout_seconds);
  if (options.log_level) {
    env["KOLO_LOG_LEVEL"] = *options.log_level;
    env["HOROVOD_LOG_LEVEL"] = *options.log_level;
  }
  for (const auto& [name, value] : options.tuning_environment) env[name] = value;
  env.emplace("PYTHONUNBUFFERED", "1");
  return env;
}

std::vector<std::string> mpirun_command(const LaunchOptions& options,
                                        const Environment& environment,
                                        const MpirunContext& context) {
  std::vector<std::string> argv = {context.mpirun};
  if (context.running_as_root) argv.emplace_back("--allow-run-as-root");
  argv.emplace_back("--tag-output");  // "[jobid,rank]<stdout>:" as kolorun's "[rank]<stdout>:"
  argv.insert(argv.end(), {"-np", std::to_string(options.num_proc)});
  if (options.hostfile) {
    argv.insert(argv.end(), {"--hostfile", *options.hostfile});  // same format as horovodrun's
  } else {
    argv.insert(argv.end(),
                {"-H", options.hosts.value_or(fmt::format("localhost:{}", options.num_proc))});
  }
  // horovodrun's defaults for Open MPI: no core binding (ranks run their own threads), ranks
  // placed slot by slot, the ob1 point-to-point layer, and no openib (InfiniBand verbs) warnings.
  if (options.binding_args) {
    for (auto& word : split_shell_words(*options.binding_args)) argv.push_back(std::move(word));
  } else {
    argv.insert(argv.end(), {"-bind-to", "none", "-map-by", "slot"});
  }
  argv.insert(argv.end(), {"-mca", "pml", "ob1", "-mca", "btl", "^openib"});
  if (options.ssh_port || options.ssh_identity_file) {
    std::string ssh_args;
    if (options.ssh_port) ssh_args += fmt::format("-p {}", *options.ssh_port);
    if (options.ssh_identity_file) {
      ssh_args += fmt::format("{}-i {}", ssh_args.empty() ? "" : " ", *options.ssh_identity_file);
    }
    argv.insert(argv.end(), {"-mca", "plm_rsh_args", ssh_args});
  }
  if (!options.network_interfaces.empty()) {
    std::string interfaces;
    for (const auto& name : options.network_interfaces) {
      interfaces += (interfaces.empty() ? "" : ",") + name;
    }
    argv.insert(argv.end(), {"-mca", "btl_tcp_if_include", interfaces, "-mca", "oob_tcp_if_include",
                             interfaces});
  }
  if (options.output_filename) {
    argv.insert(argv.end(), {"--output-filename", *options.output_filename});
  }
  if (options.prefix_output_with_timestamp) argv.emplace_back("--timestamp-output");
  for (const auto& [name, value] : environment) {
    if (forwardable(name)) argv.insert(argv.end(), {"-x", name});
  }
  if (options.mpi_args) {
    for (auto& word : split_shell_words(*options.mpi_args)) argv.push_back(std::move(word));
  }
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

std::vector<std::string> split_shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        word += c;
      }
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() &&
                 std::string_view("\"\\$`").find(text[i + 1]) != std::string_view::npos) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    throw InvalidArgument(fmt::format("--mpi-args has an unterminated {} quote: {}", quote, text));
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace kolo::launcher
