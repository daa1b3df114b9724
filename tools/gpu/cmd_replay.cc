// `zfetch-gpu replay SCHEDULE`: execute a replay schedule, compare with the timeline's prediction.
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
#include "cuda_kernels/replay_model.h"

namespace zfetch::gpu {

namespace {

struct ReplayCmdOptions {
  std::string schedule;
  std::string calibration;      // use this instead of measuring
  std::string calibration_out;  // write the measured calibration
  std::string out;              // results JSON
  int repeats = 15;
  double spin_gap_ns = -1;
  bool predict_only = false;
  bool all_edges = false;
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

// The replica of the timeline with the simulator's own calibration must give its step times.
bool check_replica(const ReplaySchedule& s) {
  const std::vector<PredictedStep> p = predict_steps(s, s.calibration);
  std::size_t same = 0;
  std::size_t compared = 0;
  for (const ReplayStep& st : s.sim_steps) {
    for (const PredictedStep& q : p) {
      if (q.step == st.step) {
        ++compared;
        same += q.step_ns == st.step_ns ? 1 : 0;
        if (q.step_ns != st.step_ns) {
          std::printf("# replica differs at step %d: simulator %lld ns, replica %lld ns\n", st.step,
                      static_cast<long long>(st.step_ns), static_cast<long long>(q.step_ns));
        }
      }
    }
  }
  std::printf(
      "# replica of the timeline (calibration '%s'): %zu of %zu steps equal to the "
      "simulator's (%zu simulator steps)\n",
      s.calibration.machine.c_str(), same, compared, s.sim_steps.size());
  return same == compared && compared > 0;
}

nlohmann::json section(const std::vector<double>& bytes, const std::vector<double>& ns,
                       double alpha, double bw, double factor) {
  nlohmann::json pts = nlohmann::json::array();
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    pts.push_back({{"bytes", static_cast<std::uint64_t>(bytes[i])},
                   {"time_ns", ns[i]},
                   {"algbw_GBps", bytes[i] / ns[i]},
                   {"busbw_GBps", bytes[i] / ns[i] * factor}});
  }
  return {{"alpha_ns", alpha},       {"busbw_GBps", bw * factor}, {"algbw_GBps", bw},
          {"alpha_algbw_ns", alpha}, {"busbw_factor", factor},    {"points", pts}};
}

nlohmann::json calibration_json(const ReplaySchedule& s, const ReplayMeasurement& m) {
  const ReplayMeasuredCalibration& c = m.measured;
  const double factor = allgather_bus_factor(static_cast<int>(s.world_size));
  nlohmann::json j;
  j["format"] = "zfetch-calibration";
  j["version"] = 1;
  j["machine"] =
      fmt::format("1x {} (zfetch-gpu replay, {} simulated ranks)", m.device, s.world_size);
  j["source"] = "zfetch-gpu replay (measured in the replay's run)";
  j["world_size"] = s.world_size;
  j["allgather"] =
      section(c.gather_bytes, c.gather_ns, c.gather_alpha_ns, c.gather_bw_gbps, factor);
  j["reduce_scatter"] = {{"alpha_ns", 0}, {"busbw_GBps", 0}};
  nlohmann::json h2d_pts = nlohmann::json::array();
  for (std::size_t i = 0; i < c.h2d_bytes.size(); ++i) {
    h2d_pts.push_back({{"bytes", static_cast<std::uint64_t>(c.h2d_bytes[i])},
                       {"time_ns", c.h2d_ns[i]},
                       {"GBps", c.h2d_bytes[i] / c.h2d_ns[i]}});
  }
  j["h2d"] = {{"bandwidth_GBps", c.h2d_bw_gbps}, {"alpha_ns", c.h2d_alpha_ns}, {"points", h2d_pts}};
  j["replay"] = {{"gather_fit_on", c.fit_on},
                 {"spin_gap_ns", c.spin_gap_ns},
                 {"timing_mark_period_ns", c.mark_period_ns},
                 {"graph_edges", m.graph_edges},
                 {"graph_nodes", m.graph_nodes}};
  j["notes"] =
      "allgather: the fused gather kernel over W simulated ranks' shards on one GPU, each launch a "
      "dependent round trip compute -> comm -> compute in a CUDA graph; bytes = W * shard bytes "
      "(what the timeline costs); busbw = algbw * (W-1)/W so the timeline's alpha + (W-1)/W * "
      "bytes / busbw is alpha + bytes / algbw. reduce_scatter: not replayed (0). h2d: dependent "
      "pinned copies (compute -> h2d -> compute) of 4 KiB to 64 MiB, alpha + bytes / bandwidth.";
  return j;
}

int run(const ReplayCmdOptions& o) {
  const ReplaySchedule s = parse_replay_schedule(read_text(o.schedule));
  std::printf("# schedule %s: scenario '%s', W %lld, offload %s, %zu ops\n", o.schedule.c_str(),
              s.scenario.c_str(), static_cast<long long>(s.world_size), s.offload ? "yes" : "no",
              s.ops.size());
  const bool replica_ok = check_replica(s);
  if (o.predict_only) {
    return replica_ok ? 0 : 1;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "zfetch-gpu: SKIP: no CUDA device visible\n");
    return 77;
  }
  ReplayConfig config;
  config.repeats = o.repeats;
  config.spin_gap_ns = o.spin_gap_ns;
  config.reduce_edges = !o.all_edges;
  if (!o.calibration.empty()) {
    config.measure_calibration = false;
    config.calibration = parse_replay_calibration(read_text(o.calibration));
  }
  const ReplayMeasurement m = run_replay(s, config);
  const ReplayCalibration& cal = m.measured.calibration;
  const std::vector<PredictedStep> pred = predict_steps(s, cal);
  if (!o.calibration_out.empty() && config.measure_calibration) {
    write_text(o.calibration_out, calibration_json(s, m).dump(2) + "\n");
  }
  const ReplayMeasuredCalibration& mc = m.measured;
  std::printf(
      "# device %s; calibration %s: gather alpha %.0f ns, %.1f GB/s (W*shard bytes; fit on %s); "
      "h2d alpha %.0f ns, %.1f GB/s; compute kernel gap %.0f ns; timing mark period %.0f ns\n",
      m.device.c_str(), config.measure_calibration ? "measured here" : o.calibration.c_str(),
      static_cast<double>(cal.allgather_alpha_ns), mc.gather_bw_gbps, mc.fit_on.c_str(),
      static_cast<double>(cal.h2d_alpha_ns), static_cast<double>(cal.h2d_bytes_per_s) / 1e9,
      mc.spin_gap_ns, mc.mark_period_ns);
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
    for (const PredictedStep& q : pred) {
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
      "err_pct=%.2f median_abs_step_err_pct=%.2f replica=%s edges=%s\n",
      s.scenario.c_str(), static_cast<long long>(s.world_size), m.steps.size(), pm / 1e3, mm / 1e3,
      err, median(errs), replica_ok ? "exact" : "DIFFERS", config.reduce_edges ? "reduced" : "all");
  if (!o.out.empty()) {
    nlohmann::json j;
    j["scenario"] = s.scenario;
    j["world_size"] = s.world_size;
    j["device"] = m.device;
    j["calibration"] = calibration_json(s, m);
    j["gather_ops"] = m.gather_ops;
    j["compute_kernels"] = m.compute_kernels;
    j["compute_skipped"] = m.compute_skipped;
    j["run_median_ns"] = m.run_median_ns;
    j["predicted_median_ns"] = pm;
    j["measured_median_ns"] = mm;
    j["err_pct"] = err;
    j["median_abs_step_err_pct"] = median(errs);
    j["replica_exact"] = replica_ok;
    j["steps"] = steps;
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
                  "predict with this zfetch-calibration file instead of measuring one");
  sub->add_option("--calibration-out", o->calibration_out, "write the measured calibration");
  sub->add_option("--out", o->out, "write per-step results (JSON)");
  sub->add_option("--repeats", o->repeats, "timed runs of the whole schedule")
      ->check(CLI::Range(1, 1000));
  sub->add_option("--spin-gap-ns", o->spin_gap_ns, "gap a compute kernel adds (default: measured)");
  sub->add_flag("--all-edges", o->all_edges,
                "keep every stream-order and wait dependency in the graph (default: leave out the "
                "ones other dependencies imply)");
  sub->add_flag("--predict-only", o->predict_only,
                "no GPU: check that the replica of the timeline gives the simulator's step times");
  sub->callback([&action, o] { action = [o] { return run(*o); }; });
}

}  // namespace zfetch::gpu
