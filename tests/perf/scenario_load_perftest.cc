// Perftest: generates a scenario of 10,000 modules and 50,000 parameters (a transformer-like
// tree: layers of attention and MLP blocks), loads it with model::load_scenario_file and reports
// wall time and peak RSS. `--generate FILE` only writes the YAML (for profiling the loader).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "model/load.h"
#include "tests/perf/perf_util.h"

namespace {

struct Shape {
  int64_t modules = 10'000;
  int64_t params = 50'000;
};

// Appends `count` params named p0..p{count-1} in YAML flow style.
void append_params(fmt::memory_buffer& out, int64_t first, int64_t count) {
  if (count == 0) {
    return;
  }
  fmt::format_to(std::back_inserter(out), ", params: {{");
  for (int64_t i = 0; i < count; ++i) {
    // Every fifth parameter is small and frozen, like a norm weight or a bias.
    const bool small = (first + i) % 5 == 4;
    fmt::format_to(std::back_inserter(out), "{}p{}: {}", i == 0 ? "" : ", ", i,
                   small ? "{shape: [64], frozen: true}" : "[64, 64]");
  }
  out.push_back('}');
}

// The root `model` has layers of 10 modules each (layer, attn + q/k/v/o, mlp + up/down, norm);
// the remaining modules are extra leaves of the root. Params are spread evenly over modules,
// the remainder going to the first ones.
std::string generate(const Shape& shape) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "name: generated-{}-modules\nsource: tests/perf/scenario_load_perftest.cc\n"
                 "world_size: 8\ndeepspeed:\n  train_micro_batch_size_per_gpu: 1\n"
                 "  gradient_accumulation_steps: 1\n  zero_optimization:\n    stage: 3\n"
                 "    stage3_param_persistence_threshold: 100\n"
                 "schedule:\n  - train: {{steps: 1}}\n",
                 shape.modules);
  const int64_t per_module = shape.params / shape.modules;
  const int64_t remainder = shape.params % shape.modules;
  int64_t module = 0;
  int64_t param = 0;
  const auto params_of_next = [&] {
    const int64_t count = per_module + (module < remainder ? 1 : 0);
    ++module;
    const int64_t first = param;
    param += count;
    return std::pair{first, count};
  };
  const auto leaf = [&](std::string_view indent, std::string_view name) {
    const auto [first, count] = params_of_next();
    fmt::format_to(it, "{}- {{name: {}", indent, name);
    append_params(out, first, count);
    fmt::format_to(it, "}}\n");
  };
  const auto inner = [&](std::string_view indent, std::string_view name) {
    const auto [first, count] = params_of_next();
    fmt::format_to(it, "{}- name: {}\n", indent, name);
    if (count > 0) {
      out.append(indent);
      fmt::format_to(it, "  params: {{");
      for (int64_t i = 0; i < count; ++i) {
        fmt::format_to(it, "{}p{}: [64, 64]", i == 0 ? "" : ", ", i);
      }
      fmt::format_to(it, "}}\n");
    }
    out.append(indent);
    fmt::format_to(it, "  children:\n");
  };
  const auto [root_first, root_count] = params_of_next();
  fmt::format_to(it, "model:\n  name: model\n");
  if (root_count > 0) {
    fmt::format_to(it, "  params: {{");
    for (int64_t i = 0; i < root_count; ++i) {
      fmt::format_to(it, "{}p{}: [64, 64]", i == 0 ? "" : ", ", i);
    }
    fmt::format_to(it, "}}\n");
  }
  (void)root_first;
  fmt::format_to(it, "  children:\n");
  const int64_t layers = (shape.modules - 1) / 10;
  for (int64_t layer = 0; layer < layers; ++layer) {
    inner("    ", fmt::format("layer_{}", layer));
    inner("        ", "attn");
    for (const char* name : {"q", "k", "v", "o"}) {
      leaf("            ", name);
    }
    inner("        ", "mlp");
    leaf("            ", "up");
    leaf("            ", "down");
    leaf("        ", "norm");
  }
  for (int64_t extra = 0; module < shape.modules; ++extra) {
    leaf("    ", fmt::format("extra_{}", extra));
  }
  return fmt::to_string(out);
}

bool write_file(const std::string& path, const std::string& text) {
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    return false;
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  return std::fclose(out) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  using zfetch::perf::report;
  Shape shape;
  if (argc == 3 && std::strcmp(argv[1], "--generate") == 0) {
    return write_file(argv[2], generate(shape)) ? 0 : 1;
  }
  const std::string path = argc > 1 ? argv[1] : "/tmp/zfetch_scenario_load_perftest.yaml";
  uint64_t file_bytes = 0;
  {
    const std::string text = generate(shape);
    file_bytes = text.size();
    if (!write_file(path, text)) {
      std::perror(path.c_str());
      return 1;
    }
  }
  const double rss_before = zfetch::perf::peak_rss_mib();
  const auto start = std::chrono::steady_clock::now();
  const zfetch::model::LoadResult result = zfetch::model::load_scenario_file(path);
  const double seconds = zfetch::perf::seconds_since(start);
  const double rss_after = zfetch::perf::peak_rss_mib();
  if (!result.scenario) {
    std::fprintf(stderr, "%s: %zu diagnostics, first: %s:%u: %s\n", path.c_str(),
                 result.diagnostics.size(), path.c_str(),
                 result.diagnostics.empty() ? 0U : result.diagnostics[0].loc.line,
                 result.diagnostics.empty() ? "" : result.diagnostics[0].message.c_str());
    return 1;
  }
  const auto& scenario = *result.scenario;
  if (static_cast<int64_t>(scenario.modules.size()) != shape.modules ||
      static_cast<int64_t>(scenario.params.size()) != shape.params) {
    std::fprintf(stderr, "loaded %zu modules and %zu params, expected %lld and %lld\n",
                 scenario.modules.size(), scenario.params.size(),
                 static_cast<long long>(shape.modules), static_cast<long long>(shape.params));
    return 1;
  }
  std::remove(path.c_str());
  report("scenario_load", "file size", static_cast<double>(file_bytes) / 1e6, "MB");
  report("scenario_load", "modules", static_cast<double>(scenario.modules.size()), "");
  report("scenario_load", "params", static_cast<double>(scenario.params.size()), "");
  report("scenario_load", "wall time", seconds * 1e3, "ms");
  report("scenario_load", "peak RSS", rss_after, "MiB");
  report("scenario_load", "peak RSS growth", rss_after - rss_before, "MiB");
  return 0;
}
