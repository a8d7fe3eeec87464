#include "common/jobdef/job_input.hpp"

#include <fmt/format.h>

#include "common/jobdef/fields.hpp"
#include "common/util/error.hpp"

namespace jobctl::jobdef {

model::JobSpec job_spec_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw usage_error("a job must be a JSON object");
  Draft d;
  for (const auto& [key, v] : j.items()) {
    const Field& f = line_field(key);
    f.apply(d, v, Name{f, Source::line});
  }
  return finish(std::move(d));
}

Error refused_in_batch(const Error& e, std::string_view item) {
  return Error(e.code(), fmt::format("{}: {}", item, e.what()),
               e.hint().empty() ? "nothing was submitted" : e.hint() + "; nothing was submitted");
}

}  // namespace jobctl::jobdef
