#include "exit_codes.hpp"

namespace jouleprof::cli {

int exit_code_for(const Error& e) { return jouleprof::exit_code_for(e); }
int report(const Error& e) { return report_error(e); }

}  // namespace jouleprof::cli
