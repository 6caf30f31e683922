// The command line: parsing and printing only; the work is in libpmon.
#pragma once

#include <string>
#include <vector>

namespace pmon::cli {

// Exit code 125 and one line on stderr: how every pmon error ends.
[[noreturn]] void die(const std::string& line);

int run_main(const std::vector<std::string>& args);
int init_main(const std::vector<std::string>& args);
int supervise_main(const std::vector<std::string>& args);
int gc_main(const std::vector<std::string>& args);
int ps_main(const std::vector<std::string>& args);
int doctor_main(const std::vector<std::string>& args);

}  // namespace pmon::cli
