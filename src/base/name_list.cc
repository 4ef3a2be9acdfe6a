#include "base/name_list.h"

#include <algorithm>

namespace kolo {

std::vector<std::string> parse_name_list(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    if (first != std::string::npos) {
      std::string name = item.substr(first, last - first + 1);
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(std::move(name));
      }
    }
    start = end + 1;
  }
  return names;
}

}  // namespace kolo
