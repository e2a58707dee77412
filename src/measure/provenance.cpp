#include <sys/utsname.h>
#include <unistd.h>

#include "jouleprof/config.hpp"
#include "jouleprof/measure/output.hpp"

namespace jouleprof {

void fill_provenance(Measurement& m) {
  m.tool_version = JOULEPROF_VERSION;
  m.git_revision = JOULEPROF_GIT_REVISION;
  m.build_type = JOULEPROF_BUILD_TYPE;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) m.host = host;
  utsname u{};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
}

}  // namespace jouleprof
