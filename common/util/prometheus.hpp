#pragma once
// The Prometheus text exposition format (0.0.4), for jobagent's metrics and
// jobctl serve's store-wide ones.
#include <string>

namespace jobctl::util {

// A label value, escaped as the format wants (\\, \", \n).
std::string prometheus_label(const std::string& value);

// A metric's "# HELP" and "# TYPE" lines, appended to `out`.
void prometheus_header(std::string& out, const char* name, const char* type, const char* help);

}  // namespace jobctl::util
