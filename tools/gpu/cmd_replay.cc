// `zfetch-gpu replay SCHEDULE`: execute a replay schedule on the GPU and compare its step times
// with the simulator's prediction written in the schedule (nothing is fitted here).
#include "tools/gpu/cmd_replay.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_kernels/calibration.h"
#include "cuda_kernels/replay.h"
#include "cuda_kernels/replay_schedule_file.h"
#include "tools/cli_numbers.h"

namespace zfetch::gpu {

namespace {

struct ReplayCmdOptions {
  std::string schedule;
  std::string calibration;  // the file the schedule must have been predicted with
  std::string out;          // results JSON
  int repeats = 15;
  double spin_gap_ns = -1;
  double lead_in_us = 50;
  bool dry_run = false;
  bool all_edges = false;
  bool trace_compute = false;
};

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw std::runtime_error("cannot read '" + path + "'");
  }
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) {
    throw std::runtime_error("cannot write '" + path + "'");
  }
}

// The costs the prediction used, as the simulator took them from its calibration.
void print_calibration(const char* what, const ReplayCalibration& c, std::int64_t world) {
  const double factor = allgather_bus_factor(static_cast<int>(world));
  std::printf(
      "# %s: '%s': all-gather alpha %lld ns, busbw %.1f GB/s (algbw %.1f GB/s at W=%lld)%s; "
      "h2d alpha %lld ns, %.1f GB/s; reduce-scatter alpha %lld ns, busbw %.1f GB/s\n",
      what, c.machine.c_str(), static_cast<long long>(c.allgather_alpha_ns),
      static_cast<double>(c.allgather_busbw) / 1e9,
      factor > 0 ? static_cast<double>(c.allgather_busbw) / 1e9 / factor : 0.0,
      static_cast<long long>(world),
      c.allgather_curve_points > 0
          ? fmt::format(", costed by its measured curve of {} points", c.allgather_curve_points)
                .c_str()
          : "",
      static_cast<long long>(c.h2d_alpha_ns), static_cast<double>(c.h2d_bytes_per_s) / 1e9,
      static_cast<long long>(c.rs_alpha_ns), static_cast<double>(c.rs_busbw) / 1e9);
}

int run(const ReplayCmdOptions& o) {
  const ReplaySchedule s = parse_replay_schedule(read_text(o.schedule));
  std::printf("# schedule %s: scenario '%s', W %lld, offload %s, %zu ops, %zu steps predicted\n",
              o.schedule.c_str(), s.scenario.c_str(), static_cast<long long>(s.world_size),
              s.offload ? "yes" : "no", s.ops.size(), s.sim_steps.size());
  print_calibration("predicted by the simulator with calibration", s.calibration, s.world_size);
  if (!o.calibration.empty()) {
    // The prediction is the simulator's; this only checks it was made with the file given.
    const ReplayCalibration given = parse_replay_calibration(read_text(o.calibration));
    print_calibration(("--calibration " + o.calibration).c_str(), given, s.world_size);
    if (!given.same_costs(s.calibration)) {
      std::fprintf(stderr,
                   "%s: error: the schedule was predicted with other costs; write it again with "
                   "`zfetch run SCENARIO --calibration %s --replay-schedule %s`\n",
                   o.schedule.c_str(), o.calibration.c_str(), o.schedule.c_str());
      return 2;
    }
  }
  if (s.sim_steps.empty()) {
    std::fprintf(stderr, "%s: error: the schedule has no predicted steps\n", o.schedule.c_str());
    return 2;
  }
  if (o.dry_run) {
    return 0;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "zfetch-gpu: SKIP: no CUDA device visible\n");
    return 77;
  }
  ReplayConfig config;
  config.repeats = o.repeats;
  config.spin_gap_ns = o.spin_gap_ns;
  config.lead_in_ns = static_cast<std::uint64_t>(std::max(0.0, o.lead_in_us) * 1e3);
  config.reduce_edges = !o.all_edges;
  config.trace_compute = o.trace_compute;
  const ReplayMeasurement m = run_replay(s, config);
  std::printf("# device %s; compute kernel gap %.0f ns\n", m.device.c_str(), m.spin_gap_ns);
  std::printf(
      "# graph: %lld gathers, %lld compute kernels, %lld compute ops shorter than the gap "
      "(no kernel); %llu nodes, %llu edges (%s); %.1f MiB of buffers; %d repeats\n",
      static_cast<long long>(m.gather_ops), static_cast<long long>(m.compute_kernels),
      static_cast<long long>(m.compute_skipped), static_cast<unsigned long long>(m.graph_nodes),
      static_cast<unsigned long long>(m.graph_edges),
      config.reduce_edges ? "implied edges left out" : "all edges",
      static_cast<double>(m.device_bytes) / (1 << 20), o.repeats);
  std::printf("# %5s %14s %14s %8s\n", "step", "predicted_us", "measured_us", "err%");
  nlohmann::json steps = nlohmann::json::array();
  std::vector<double> pv;
  std::vector<double> mv;
  std::vector<double> errs;
  for (std::size_t k = 0; k < m.steps.size(); ++k) {
    double p = 0;
    for (const ReplayStep& q : s.sim_steps) {
      if (q.step == m.steps[k]) {
        p = static_cast<double>(q.step_ns);
      }
    }
    const double meas = m.step_median_ns[k];
    const double err = meas > 0 ? (p - meas) / meas * 100 : 0;
    pv.push_back(p);
    mv.push_back(meas);
    errs.push_back(std::fabs(err));
    if (k < 12 || k + 3 > m.steps.size()) {
      std::printf("  %5d %14.3f %14.3f %8.2f\n", m.steps[k], p / 1e3, meas / 1e3, err);
    }
    steps.push_back({{"step", m.steps[k]},
                     {"predicted_ns", p},
                     {"measured_median_ns", meas},
                     {"measured_ns", m.step_samples[k]},
                     {"err_pct", err}});
  }
  const double pm = median(pv);
  const double mm = median(mv);
  const double err = mm > 0 ? (pm - mm) / mm * 100 : 0;
  std::printf(
      "RESULT %s W=%lld steps=%zu predicted_median_us=%.3f measured_median_us=%.3f "
      "err_pct=%.2f median_abs_step_err_pct=%.2f edges=%s\n",
      s.scenario.c_str(), static_cast<long long>(s.world_size), m.steps.size(), pm / 1e3, mm / 1e3,
      err, median(errs), config.reduce_edges ? "reduced" : "all");
  if (!o.out.empty()) {
    nlohmann::json j;
    j["scenario"] = s.scenario;
    j["world_size"] = s.world_size;
    j["device"] = m.device;
    j["calibration"] = s.calibration.machine;
    j["spin_gap_ns"] = m.spin_gap_ns;
    j["lead_in_ns"] = config.lead_in_ns;
    j["gather_ops"] = m.gather_ops;
    j["compute_kernels"] = m.compute_kernels;
    j["compute_skipped"] = m.compute_skipped;
    j["run_median_ns"] = m.run_median_ns;
    j["predicted_median_ns"] = pm;
    j["measured_median_ns"] = mm;
    j["err_pct"] = err;
    j["median_abs_step_err_pct"] = median(errs);
    j["steps"] = steps;
    if (!m.compute_trace.empty()) {
      // Each compute kernel measured beside the simulator's slice of the same op.
      nlohmann::json t = nlohmann::json::array();
      for (const ReplayComputeTime& c : m.compute_trace) {
        const ReplayOp& op = s.ops[c.op];
        t.push_back({{"op", c.op},
                     {"start_ns", c.start_ns},
                     {"end_ns", c.end_ns},
                     {"predicted_start_ns", op.start_ns},
                     {"predicted_dur_ns", op.dur_ns},
                     {"waits", op.waits}});
      }
      j["compute_trace"] = t;
    }
    write_text(o.out, j.dump(1) + "\n");
  }
  return 0;
}

}  // namespace

void setup_replay(CLI::App& app, std::function<int()>& action) {
  auto o = std::make_shared<ReplayCmdOptions>();
  CLI::App* sub = app.add_subcommand(
      "replay", "execute a schedule from `zfetch run --replay-schedule`; compare step times");
  sub->add_option("schedule", o->schedule, "replay schedule (JSON)")->required();
  sub->add_option("--calibration", o->calibration,
                  "the calibration file the schedule was predicted with (`zfetch run "
                  "--calibration FILE`): print its costs, and stop if they differ");
  sub->add_option("--out", o->out, "write per-step results (JSON)");
  sub->add_option("--repeats", o->repeats, "timed runs of the whole schedule")
      ->check(tools::decimal_unsigned(1, 1000));
  sub->add_option("--spin-gap-ns", o->spin_gap_ns, "gap a compute kernel adds (default: measured)");
  sub->add_option("--lead-in-us", o->lead_in_us,
                  "a compute kernel this long before the first step, so the graph's launch is "
                  "ahead of its tiny ops (default 50; 0: none)");
  sub->add_flag("--all-edges", o->all_edges,
                "keep every stream-order and wait dependency in the graph (default: leave out the "
                "ones other dependencies imply)");
  sub->add_flag("--trace-compute", o->trace_compute,
                "every compute kernel writes the GPU's global timer at its start and end; --out "
                "gets each one's median beside the simulator's start for the same op (needs the "
                "lead-in)");
  sub->add_flag("--dry-run", o->dry_run,
                "no GPU: read the schedule, print the calibration it was predicted with");
  sub->callback([&action, o] { action = [o] { return run(*o); }; });
}

}  // namespace zfetch::gpu
