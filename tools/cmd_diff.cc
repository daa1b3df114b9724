// zfetch diff RECORDED EXPECTED: compares a recorded trace with an expected trace (or an order
// file), LLVM FileCheck-style; exit 0 equal, 1 different, 2 bad input.
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "diag/render.h"
#include "io/input_file.h"
#include "model/read_error.h"
#include "tools/cli_numbers.h"
#include "tools/commands.h"
#include "tools/diff_render.h"
#include "tools/input_kind.h"
#include "tools/order_input.h"
#include "trace/diff.h"
#include "trace/order_file.h"
#include "trace/reader.h"

namespace zfetch::tools {
namespace {

struct DiffCommandOptions {
  std::string recorded;
  std::string expected;
  std::string fields;
  std::string kinds;
  int rank = -1;
  bool ignore_ids = false;
  bool all = false;
  bool json = false;
  size_t context = 2;
};

// The options' projection, or an error about the command line.
bool make_projection(const DiffCommandOptions& o, trace::Projection& projection) {
  std::string error;
  if (!o.fields.empty()) {
    auto fields = trace::parse_fields(o.fields, error);
    if (!fields) {
      std::fprintf(stderr, "command line: error: --fields: %s\n", error.c_str());
      return false;
    }
    projection.fields = *fields;
  }
  if (!o.kinds.empty()) {
    auto kinds = trace::parse_kinds(o.kinds, projection.skip_own_access, error);
    if (!kinds) {
      std::fprintf(stderr, "command line: error: --kinds: %s\n", error.c_str());
      return false;
    }
    projection.kinds = *kinds;
  }
  projection.ignore_ids = o.ignore_ids;
  projection.rank = o.rank;
  return true;
}

// RECORDED against an order file: the events the projection selects, through the checker.
int run_order_check(const DiffCommandOptions& o, const trace::Projection& projection,
                    const std::optional<trace::OrderFile>& order) {
  if (!order) {
    return kExitBadInput;
  }
  io::InputStream in(o.recorded);
  if (!in.error().empty()) {
    std::fprintf(stderr, "%s: error: cannot read file: %s\n", o.recorded.c_str(),
                 in.error().c_str());
    return kExitBadInput;
  }
  trace::TraceReader reader(in, o.recorded);
  trace::OrderChecker checker(*order, o.recorded);
  if (reader.read_header()) {
    while (const trace::Event* e = reader.next()) {
      if (projection.selects(*e)) {
        checker.on_event(*e, reader.line());
      }
      if (checker.failed()) {
        break;
      }
    }
  }
  const std::optional<diag::Diagnostic> failure = checker.finish();
  if (failure) {
    std::fputs(diag::render(*failure).c_str(), stdout);
    return kExitMismatch;
  }
  if (reader.error()) {
    std::fputs(diag::render(*reader.error()).c_str(), stderr);
    return kExitBadInput;
  }
  std::printf("%s: every directive of %s holds (%llu events checked)\n", o.recorded.c_str(),
              o.expected.c_str(), static_cast<unsigned long long>(checker.events()));
  return kExitOk;
}

int run_diff(const DiffCommandOptions& o) {
  trace::DiffOptions options;
  if (!make_projection(o, options.projection)) {
    return kExitBadInput;
  }
  options.context = o.context;
  // A pipe (`<(zcat expected.jsonl.gz)`) cannot be looked at and then read again: it is read
  // whole, within the input limit, and its text decides what it is.
  std::optional<std::string> piped;
  if (!io::is_regular_file(o.expected)) {
    io::InputText input = io::read_input_file(o.expected);
    if (!input.text) {
      std::fputs(diag::render(model::read_error(o.expected, input, "cannot read file")).c_str(),
                 stderr);
      return kExitBadInput;
    }
    piped = std::move(input.text);
  }
  // An expected trace by its header, whatever it is called; anything else is an order file.
  if (piped ? !is_trace_text(*piped) : !is_trace_file(o.expected)) {
    return run_order_check(
        o, options.projection,
        piped ? parse_order_or_report(o.expected, *piped) : load_order_or_report(o.expected));
  }
  io::InputStream recorded_in(o.recorded);
  io::InputStream expected_in(piped ? "/dev/null" : o.expected);
  for (const auto& [file, in] :
       {std::pair{&o.recorded, &recorded_in}, {&o.expected, &expected_in}}) {
    if (!in->error().empty()) {
      std::fprintf(stderr, "%s: error: cannot read file: %s\n", file->c_str(), in->error().c_str());
      return kExitBadInput;
    }
  }
  std::istringstream piped_in(piped.value_or(""));
  trace::TraceReader recorded(recorded_in, o.recorded);
  trace::TraceReader expected = piped ? trace::TraceReader(piped_in, o.expected)
                                      : trace::TraceReader(expected_in, o.expected);
  for (trace::TraceReader* reader : {&recorded, &expected}) {
    if (!reader->read_header()) {
      std::fputs(diag::render(*reader->error()).c_str(), stderr);
      return kExitBadInput;
    }
  }
  const trace::DiffReport report = trace::diff_traces(recorded, expected, options);
  if (o.json) {
    std::printf("%s\n", render_diff_json(report, o.recorded, o.expected).dump(2).c_str());
  } else {
    std::fputs(render_diff_text(report, o.recorded, o.expected, o.all).c_str(), stdout);
  }
  if (report.error) {
    std::fputs(diag::render(*report.error).c_str(), stderr);
    return kExitBadInput;
  }
  return report.equal() ? kExitOk : kExitMismatch;
}

}  // namespace

void setup_diff(CLI::App& sub, std::function<int()>& action) {
  auto o = std::make_shared<DiffCommandOptions>();
  sub.add_option("recorded", o->recorded, "the recorded trace (.jsonl)")->required();
  sub.add_option(
         "expected", o->expected,
         "the expected trace (known by its header line, whatever its name), or an order file "
         "(docs/diff.md)")
      ->required();
  sub.add_option("--fields", o->fields,
                 "fields compared, comma-separated (default "
                 "engine,step,micro_step,phase,kind,module,param; also trace_step, status, numel, "
                 "bytes, rank, t_ns)");
  sub.add_option("--kinds", o->kinds,
                 "event kinds compared, comma-separated (default all; `recorded`: the kinds a "
                 "recorder of real DeepSpeed writes)");
  sub.add_option("--rank", o->rank, "compare only this rank's events");
  sub.add_flag("--ignore-ids", o->ignore_ids,
               "compare modules and params by name only (two processes' global ids differ)");
  sub.add_flag("--all", o->all, "list every divergence, not only the first");
  sub.add_flag("--json", o->json, "print the report as JSON (docs/diff.md)");
  sub.add_option("--context", o->context, "events of context around a divergence (default 2)")
      ->check(decimal_unsigned());
  sub.callback([&action, o] { action = [o] { return run_diff(*o); }; });
}

}  // namespace zfetch::tools
