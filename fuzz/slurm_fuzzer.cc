// A Slurm allocation as the environment describes it (launcher/slurm.h): the input is the values
// of SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE and SLURM_NTASKS, separated
// by '\0'. Each expander also sees the first field alone. What parses must give one positive task
// count per node.
#include <map>

#include "fuzz/fuzz_support.h"
#include "launcher/hosts/slurm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kolo;
  const std::string_view text = fuzz::as_text(data, size);
  const auto values = fuzz::fields(text, 4);

  fuzz::refuses_cleanly([&] { (void)launcher::expand_slurm_nodelist(values[0]); });
  fuzz::refuses_cleanly([&] { (void)launcher::expand_slurm_tasks_per_node(values[0]); });

  const std::map<std::string, std::string> env = {
      {"SLURM_JOB_NODELIST", std::string(values[0])},
      {"SLURM_TASKS_PER_NODE", std::string(values[1])},
      {"SLURM_NTASKS_PER_NODE", std::string(values[2])},
      {"SLURM_NTASKS", std::string(values[3])},
  };
  auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  if (auto allocation = fuzz::decode_or_refuse(
          [&] { return launcher::slurm_allocation(lookup, std::nullopt); })) {
    fuzz::require(allocation->has_value() == !values[0].empty(), "an allocation iff a node list");
    if (*allocation) {
      for (const auto& node : (*allocation)->nodes) {
        fuzz::require(!node.name.empty() && node.tasks >= 1, "named nodes with tasks");
      }
    }
  }
  return 0;
}
