// kolorun --check-build: horovodrun's table of available frameworks, controllers and tensor
// operations, filled from what the Python on PATH actually finds (kolo's module and its build
// flags, PyTorch and its version), not from what kolorun was compiled with.
#pragma once

#include <map>
#include <string>

namespace kolo::launcher {

using BuildFacts = std::map<std::string, std::string>;

// Runs the probe with `python` (found on PATH) and returns its key=value facts; a failure to run
// Python is a fact too ("python_error").
BuildFacts probe_build(const std::string& python);

// The table (pure, for tests).
std::string format_check_build(const BuildFacts& facts, const std::string& kolorun_version);

// Prints the table; returns kolorun's exit code (1 when kolo's module cannot be imported).
int run_check_build(const std::string& kolorun_version);

}  // namespace kolo::launcher
