#include "launcher/check_build.h"

#include <gtest/gtest.h>

namespace kolo::launcher {
namespace {

TEST(CheckBuild, TableFollowsTheFacts) {
  const BuildFacts found{{"python", "/usr/bin/python3"},
                         {"kolo", "0.1.0"},
                         {"kolo_path", "/x/kolo/__init__.py"},
                         {"gloo_built", "True"},
                         {"mpi_built", "False"},
                         {"nccl_built", "False"},
                         {"torch", "2.3.1"},
                         {"kolo_torch", "True"}};
  std::string table = format_check_build(found, "0.1.0");
  EXPECT_NE(table.find("[X] PyTorch (torch 2.3.1)"), std::string::npos) << table;
  EXPECT_NE(table.find("Available Controllers:\n    [ ] MPI\n    [X] Gloo\n"), std::string::npos)
      << table;
  EXPECT_NE(table.find("    [ ] NCCL\n"), std::string::npos) << table;

  BuildFacts mpi = found;
  mpi["mpi_built"] = "True";
  mpi["nccl_built"] = "True";
  table = format_check_build(mpi, "0.1.0");
  EXPECT_NE(table.find("    [X] MPI\n    [X] Gloo\n\nAvailable Tensor"), std::string::npos)
      << table;
  EXPECT_NE(table.find("    [X] NCCL\n"), std::string::npos) << table;

  BuildFacts libraries = found;
  libraries["lib_nccl"] = "libnccl.so.2";
  table = format_check_build(libraries, "0.1.0");
  EXPECT_NE(table.find("    [ ] NCCL (libnccl.so.2 found, but this kolo build does not use it)\n"),
            std::string::npos)
      << table;

  // What kolo._core.nccl_status() found in the probe's process (after importing torch).
  BuildFacts found_nccl = found;
  found_nccl["nccl_loaded"] = "True";
  found_nccl["nccl_describe"] =
      "2.30.7 (/v/nvidia/nccl/lib/libnccl.so.2, already loaded by the process)";
  table = format_check_build(found_nccl, "0.1.0");
  EXPECT_NE(
      table.find("    [ ] NCCL 2.30.7 (/v/nvidia/nccl/lib/libnccl.so.2, already loaded by the "
                 "process): found, but this version of kolo has no NCCL backend"),
      std::string::npos)
      << table;
  found_nccl["nccl_built"] = "True";
  table = format_check_build(found_nccl, "0.1.0");
  EXPECT_NE(
      table.find("    [X] NCCL 2.30.7 (/v/nvidia/nccl/lib/libnccl.so.2, already loaded by the "
                 "process)\n"),
      std::string::npos)
      << table;
  found_nccl["nccl_loaded"] = "False";
  found_nccl["nccl_describe"] = "NCCL 2.17.3 at /x/libnccl.so.2 (KOLO_NCCL_LIBRARY) is too old";
  table = format_check_build(found_nccl, "0.1.0");
  EXPECT_NE(table.find("    [ ] NCCL (NCCL 2.17.3 at /x/libnccl.so.2 (KOLO_NCCL_LIBRARY) is too "
                       "old)\n"),
            std::string::npos)
      << table;

  const BuildFacts no_torch{{"python", "/usr/bin/python3"},
                            {"kolo", "0.1.0"},
                            {"gloo_built", "True"},
                            {"torch_error", "ModuleNotFoundError: No module named 'torch'"}};
  table = format_check_build(no_torch, "0.1.0");
  EXPECT_NE(table.find("[ ] PyTorch (ModuleNotFoundError"), std::string::npos) << table;

  const BuildFacts no_kolo{{"python", "/usr/bin/python3"},
                           {"kolo_error", "ModuleNotFoundError: No module named 'kolo'"},
                           {"gloo_built", "True"}};
  table = format_check_build(no_kolo, "0.1.0");
  EXPECT_NE(table.find("kolo module: cannot be imported (ModuleNotFoundError"), std::string::npos);
  EXPECT_NE(table.find("[ ] Gloo"), std::string::npos) << table;
}

}  // namespace
}  // namespace kolo::launcher
