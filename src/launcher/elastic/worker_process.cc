#include "launcher/elastic/worker_process.h"

#include <signal.h>

#include <string>

#include "launcher/spawn/agent_protocol.h"
#include "launcher/spawn/group_signal.h"
#include "launcher/spawn/spawner.h"

namespace kolo::launcher {

void ElasticWorkerProcess::send_signal(int signal) {
  if (control.valid()) {
    if (signal == SIGKILL) {
      control.reset();  // the agent kills the rank when its session ends
      hard_stopped = true;
    } else {
      const std::string request = agent_signal_request(signal);
      if (write_fully(control.fd(), request.data(), request.size())) return;
    }
  }
  if (signal == SIGKILL) hard_stopped = true;
  (void)signal_group(pid, signal);
}

std::unique_ptr<ElasticWorkerProcess> start_elastic_worker(
    const ElasticWorker& who, int planned_rank, int planned_size, int64_t first_round,
    const LaunchOptions& options, const Environment& base_env, ElasticJobServices& services) {
  auto worker = std::make_unique<ElasticWorkerProcess>();
  worker->who = who;
  SlotAssignment place{who.host, planned_rank, planned_size, who.slot, who.slot + 1, 0, 1};
  Environment env = build_rank_environment(base_env, services.job, place);
  env["KOLO_ELASTIC"] = "1";
  env["HOROVOD_ELASTIC"] = "1";
  env["KOLO_WORKER_ID"] = who.id();
  env["KOLO_ELASTIC_FIRST_ROUND"] = std::to_string(first_round);
  env["KOLO_ELASTIC_TIMEOUT"] = format_seconds(options.elastic_timeout_seconds);
  SpawnRequest request{place, options.command, std::move(env)};
  SpawnedProcess process = services.spawners->for_host(who.host).spawn(request);
  worker->pid = process.pid;
  worker->control = std::move(process.control);
  OutputMultiplexer::LineFilter filter;
  if (worker->control.valid()) {
    // A remote worker's real exit status comes as a line from its agent, not from waitpid().
    worker->agent_report = std::make_shared<std::optional<ExitStatus>>();
    filter = [report = worker->agent_report](std::string_view line) {
      auto status = parse_agent_status_line(line);
      if (status) *report = status;
      return status.has_value();
    };
  }
  services.output->add_rank(who.serial, std::move(process.stdout_read),
                            std::move(process.stderr_read), std::move(filter));
  return worker;
}

}  // namespace kolo::launcher
