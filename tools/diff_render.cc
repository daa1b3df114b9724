// Renders a DiffReport: compiler-style errors with notes and context, or JSON.
#include "tools/diff_render.h"

#include <fmt/format.h>

#include "diag/render.h"
#include "trace/names.h"
#include "trace/text_format.h"

namespace zfetch::tools {
namespace {

using trace::Divergence;
using trace::Event;
using trace::LocatedEvent;

std::string module_name(std::string_view module) {
  return module == trace::kRootModuleName ? std::string("the root module")
                                          : fmt::format("module '{}'", module);
}

// The fields two events differ in, `name=recorded (expected value)`, for a changed event whose
// description reads the same on both sides (a size or a status).
std::string differing_fields(const Event& recorded, const Event& expected) {
  std::string out;
  const auto add = [&out](std::string_view name, auto found, auto wanted) {
    if (found != wanted) {
      out += fmt::format("{}{}={} (expected {})", out.empty() ? "" : ", ", name, found, wanted);
    }
  };
  add("step", recorded.step, expected.step);
  add("status", trace::format_as(recorded.status), trace::format_as(expected.status));
  add("numel", recorded.numel, expected.numel);
  add("bytes", recorded.bytes, expected.bytes);
  add("module_id", recorded.module_id, expected.module_id);
  add("param_id", recorded.param_id, expected.param_id);
  add("rank", recorded.rank, expected.rank);
  add("t_ns", recorded.t_ns, expected.t_ns);
  return out;
}

void append_context(std::string& out, const std::string& file, const Divergence& d) {
  if (d.before.empty() && d.after.empty() && !d.recorded) {
    return;
  }
  out += fmt::format("{}:{}: note: recorded events around it:\n", file, d.recorded_line);
  const auto line = [&out](const LocatedEvent& e, char mark) {
    out += fmt::format("  {} {:>6} | {}\n", mark, e.line, trace::format_event(e.event));
  };
  for (const LocatedEvent& e : d.before) {
    line(e, ' ');
  }
  if (d.recorded) {
    line(*d.recorded, '>');
  }
  for (const LocatedEvent& e : d.after) {
    line(e, ' ');
  }
}

diag::Diagnostic divergence_diagnostic(const Divergence& d, const std::string& recorded_file,
                                       const std::string& expected_file) {
  diag::Diagnostic diagnostic;
  diagnostic.file = recorded_file;
  diagnostic.loc = {static_cast<uint32_t>(d.recorded_line), 0};
  switch (d.type) {
  case Divergence::Type::Changed: {
    const std::string found = describe_event(d.recorded->event);
    const std::string wanted = describe_event(d.expected->event);
    diagnostic.message = fmt::format("expected {}; found {}", wanted, found);
    if (found == wanted) {
      diagnostic.message +=
          fmt::format(" with {}", differing_fields(d.recorded->event, d.expected->event));
    }
    break;
  }
  case Divergence::Type::Missing:
    diagnostic.message =
        fmt::format("expected {}; found {}", describe_event(d.expected->event),
                    d.recorded ? describe_event(d.recorded->event)
                               : std::string("the end of the pass in the recorded trace"));
    break;
  case Divergence::Type::Extra:
    diagnostic.message = fmt::format("unexpected {}", describe_event(d.recorded->event));
    break;
  }
  if (d.expected) {
    const char* what =
        d.type == Divergence::Type::Extra ? "the expected trace has instead" : "expected here";
    diagnostic.notes.push_back({{static_cast<uint32_t>(d.expected->line), 0},
                                fmt::format("{}: {}", what, trace::format_event(d.expected->event)),
                                "",
                                1,
                                expected_file});
  }
  return diagnostic;
}

nlohmann::ordered_json event_json(const LocatedEvent& e) {
  nlohmann::ordered_json j;
  j["line"] = e.line;
  j["event"] = trace::format_event(e.event);
  return j;
}

}  // namespace

std::string describe_event(const Event& e) {
  std::string out(trace::format_as(e.kind));
  if (e.param_id >= 0) {
    out += fmt::format(" of {}", e.param);
    if (e.module_id >= 0) {
      out += fmt::format(" for {}", module_name(e.module));
    }
  } else if (e.module_id >= 0) {
    out += fmt::format(" of {}", module_name(e.module));
  }
  if (e.trace_step >= 0) {
    out += fmt::format(" at trace step {}", e.trace_step);
  }
  out += fmt::format(" (engine {}, micro-step {}, {})", e.engine, e.micro_step, e.phase);
  return out;
}

std::string render_diff_text(const trace::DiffReport& report, const std::string& recorded_file,
                             const std::string& expected_file, bool all) {
  std::string out;
  const size_t shown =
      all ? report.divergences.size() : std::min<size_t>(1, report.divergences.size());
  for (size_t i = 0; i < shown; ++i) {
    const Divergence& d = report.divergences[i];
    out += diag::render(divergence_diagnostic(d, recorded_file, expected_file));
    append_context(out, recorded_file, d);
  }
  if (report.error) {
    out += fmt::format(
        "{} divergence{} in the {} recorded and {} expected events before the read error\n",
        report.divergence_count(), report.divergence_count() == 1 ? "" : "s",
        report.recorded_events, report.expected_events);
  } else if (report.divergence_count() == 0) {
    out += fmt::format("{} and {}: equal ({} events compared)\n", recorded_file, expected_file,
                       report.recorded_events);
  } else {
    out += fmt::format(
        "{} divergence{}: {} missing, {} extra, {} changed ({} recorded and {} expected events "
        "compared){}\n",
        report.divergence_count(), report.divergence_count() == 1 ? "" : "s", report.missing,
        report.extra, report.changed, report.recorded_events, report.expected_events,
        !all && report.divergence_count() > 1 ? "; --all lists every one" : "");
  }
  return out;
}

nlohmann::ordered_json render_diff_json(const trace::DiffReport& report,
                                        const std::string& recorded_file,
                                        const std::string& expected_file) {
  nlohmann::ordered_json j;
  j["format"] = "zfetch-diff";
  j["version"] = 1;
  j["recorded"] = recorded_file;
  j["expected"] = expected_file;
  j["equal"] = report.equal();
  j["compared"] = {{"recorded", report.recorded_events}, {"expected", report.expected_events}};
  j["summary"] = {
      {"missing", report.missing}, {"extra", report.extra}, {"changed", report.changed}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Divergence& d : report.divergences) {
    const diag::Diagnostic diagnostic = divergence_diagnostic(d, recorded_file, expected_file);
    nlohmann::ordered_json item;
    item["type"] = std::string(trace::format_as(d.type));
    item["line"] = d.recorded_line;
    item["message"] = diagnostic.message;
    item["recorded"] = d.recorded ? event_json(*d.recorded) : nlohmann::ordered_json(nullptr);
    item["expected"] = d.expected ? event_json(*d.expected) : nlohmann::ordered_json(nullptr);
    list.push_back(std::move(item));
  }
  j["divergences"] = std::move(list);
  j["divergences_left_out"] = report.divergence_count() - report.divergences.size();
  j["error"] = report.error ? nlohmann::ordered_json(diag::render(*report.error))
                            : nlohmann::ordered_json(nullptr);
  return j;
}

}  // namespace zfetch::tools
