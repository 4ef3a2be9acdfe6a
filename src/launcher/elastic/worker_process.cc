#include "launcher/elastic/worker_process.h"

#include <signal.h>

#include <string>

#include "launcher/spawn/agent_protocol.h"
#include "launcher/spawn/group_signal.h"

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

}  // namespace kolo::launcher
