// Reading calibration JSON: values, defaults, built-ins and line:col diagnostics.
#include "sim/timeline/calibration.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "diag/render.h"

namespace zfetch::sim {
namespace {

std::string first_error(const CalibrationResult& r) {
  if (r.diagnostics.empty()) {
    return "";
  }
  const std::string rendered = diag::render(r.diagnostics.front());
  return rendered.substr(0, rendered.find('\n'));
}

// A calibration file of a fixed all-gather line and the given "h2d" object, which starts line 3
// (the diagnostics' positions are those of this layout).
CalibrationResult parse_h2d(std::string_view h2d) {
  return parse_calibration("cal.json", std::string(R"({"format": "zfetch-calibration",
"version": 1, "allgather": {"alpha_ns": 10, "busbw_GBps": 100},
"h2d": )") + std::string(h2d) + "}");
}

TEST_SUITE("timeline") {
  TEST_CASE("calibration: a complete file converts GB/s to integer bytes/s") {
    const CalibrationResult r = parse_calibration("cal.json", R"({
  "format": "zfetch-calibration", "version": 1, "machine": "8x H100", "source": "bench",
  "world_size": 8,
  "allgather": {"alpha_ns": 15000.4, "busbw_GBps": 362.5, "points": [[1024, 20.0]]},
  "gather_kernel": {"anything": true},
  "d2d_copy_GBps": 1500,
  "h2d": {"bandwidth_GBps": 53.25, "alpha_ns": 2517.6},
  "reduce_scatter": {"alpha_ns": 16000, "busbw_GBps": 350},
  "compute": {"flops_per_s": 7.5e14}
})");
    REQUIRE(r.diagnostics.empty());
    const Calibration& c = *r.calibration;
    CHECK(c.machine == "8x H100");
    CHECK(c.world_size == 8);
    CHECK(c.allgather.alpha_ns == 15'000);
    CHECK(c.allgather.busbw_bytes_per_s == 362'500'000'000);
    CHECK(c.reduce_scatter.alpha_ns == 16'000);
    CHECK(c.reduce_scatter.busbw_bytes_per_s == 350'000'000'000);
    CHECK(c.h2d_bytes_per_s == 53'250'000'000);
    CHECK(c.h2d_alpha_ns == 2'518);
    CHECK(c.d2d_bytes_per_s == 1'500'000'000'000);
    CHECK(c.flops_per_s == 750'000'000'000'000);
  }

  TEST_CASE("calibration: optional blocks take their defaults") {
    const CalibrationResult r = parse_calibration("cal.json", R"({"format": "zfetch-calibration",
 "version": 1, "allgather": {"alpha_ns": 10, "busbw_GBps": 100}, "h2d": {"bandwidth_GBps": 50}})");
    REQUIRE(r.diagnostics.empty());
    CHECK(r.calibration->reduce_scatter.alpha_ns == 10);
    CHECK(r.calibration->reduce_scatter.busbw_bytes_per_s == 100'000'000'000);
    CHECK(r.calibration->flops_per_s == kDefaultFlopsPerSecond);
    CHECK(r.calibration->h2d_alpha_ns == 0);   // files without h2d.alpha_ns read as before
    CHECK(r.calibration->name == "cal.json");  // a file without "name" is called by its file
  }

  TEST_CASE("calibration: \"interpolate\": true reads the measured points as a curve") {
    const CalibrationResult r = parse_calibration("cal.json", R"({"format": "zfetch-calibration",
"version": 1, "allgather": {"alpha_ns": 10, "busbw_GBps": 100, "interpolate": true,
"points": [{"bytes": 4096, "time_ns": 2000.4}, {"bytes": 8192, "time_ns": 2100.6}]},
"h2d": {"bandwidth_GBps": 50}})");
    REQUIRE(r.diagnostics.empty());
    REQUIRE(r.calibration->allgather.curve.size() == 2);
    CHECK(r.calibration->allgather.curve[0].time_ns == 2'000);
    CHECK(r.calibration->allgather.curve[1].time_ns == 2'101);
    CHECK(r.calibration->reduce_scatter.curve.size() == 2);  // defaults to allgather
    // Points without the flag are for reading only (files written before the flag existed).
    const CalibrationResult plain =
        parse_calibration("cal.json", R"({"format": "zfetch-calibration",
"version": 1, "allgather": {"alpha_ns": 10, "busbw_GBps": 100,
"points": [{"bytes": 4096, "time_ns": 2000}, {"bytes": 8192, "time_ns": 2100}]},
"h2d": {"bandwidth_GBps": 50}})");
    REQUIRE(plain.diagnostics.empty());
    CHECK(plain.calibration->allgather.curve.empty());
    const CalibrationResult unsorted =
        parse_calibration("cal.json", R"({"format": "zfetch-calibration",
"version": 1, "allgather": {"alpha_ns": 10, "busbw_GBps": 100, "interpolate": true,
"points": [{"bytes": 8192, "time_ns": 2000}, {"bytes": 4096, "time_ns": 2100}]},
"h2d": {"bandwidth_GBps": 50}})");
    REQUIRE(unsorted.diagnostics.size() == 1);
    CHECK(unsorted.diagnostics[0].message ==
          "'allgather.points' must be in increasing bytes (4096 after 8192)");
  }

  TEST_CASE("calibration: the fixed costs of a replay calibration") {
    const CalibrationResult r = parse_calibration("cal.json", R"({"format": "zfetch-calibration",
"version": 1, "allgather": {"alpha_ns": 10, "busbw_GBps": 100, "interpolate": true,
"points": [{"bytes": 256, "time_ns": 1359.4}, {"bytes": 512, "time_ns": 1363}],
"odd_points": [{"bytes": 80, "time_ns": 1502}, {"bytes": 272, "time_ns": 1507.5}]},
"h2d": {"bandwidth_GBps": 50, "alpha_ns": 2700, "small_copy": {"bytes": 64, "time_ns": 2410.2},
"points": [{"bytes": 4096, "time_ns": 2660}]}, "step": {"fixed_ns": 252.8}})");
    REQUIRE(r.diagnostics.empty());
    const Calibration& c = *r.calibration;
    REQUIRE(c.allgather.odd_curve.size() == 2);
    CHECK(c.allgather.odd_curve[1].time_ns == 1'508);
    CHECK(c.h2d_small_copy.bytes == 64);
    CHECK(c.h2d_small_copy.time_ns == 2'410);
    CHECK(c.h2d_line_from_bytes == 4'096);
    CHECK(c.step_fixed_ns == 253);
    // Files without them (every calibration before) read as before: no fixed costs.
    const CalibrationResult old = parse_calibration("cal.json", R"({"format": "zfetch-calibration",
"version": 1, "allgather": {"alpha_ns": 10, "busbw_GBps": 100}, "h2d": {"bandwidth_GBps": 50}})");
    REQUIRE(old.diagnostics.empty());
    CHECK(old.calibration->allgather.odd_curve.empty());
    CHECK(old.calibration->h2d_small_copy.bytes == 0);
    CHECK(old.calibration->step_fixed_ns == 0);
    // A small copy must be smaller than the line's first point.
    const CalibrationResult big =
        parse_h2d(R"({"bandwidth_GBps": 50, "small_copy": {"bytes": 4096, "time_ns": 1},
"points": [{"bytes": 4096, "time_ns": 2660}]})");
    REQUIRE(big.diagnostics.size() == 1);
    CHECK(big.diagnostics[0].message ==
          "'h2d.small_copy.bytes' must be above 0 and below the first of 'h2d.points' (4096), got "
          "4096");
  }

  TEST_CASE("calibration: copies measured beside gathers set the h2d bandwidth") {
    // 16 MiB in 310,542 ns, 2,617 ns of it the copy's fixed cost: 54.48 GB/s, not the line's 55.
    const CalibrationResult r = parse_h2d(R"({"bandwidth_GBps": 55, "alpha_ns": 2617,
"beside_gather": {"bytes": 16777216, "time_ns": 310542}})");
    REQUIRE(r.diagnostics.empty());
    CHECK(r.calibration->h2d_bytes_per_s == 54'484'747'909);
    // Without it the line's bandwidth stands.
    const CalibrationResult line = parse_h2d(R"({"bandwidth_GBps": 55, "alpha_ns": 2617})");
    CHECK(line.calibration->h2d_bytes_per_s == 55'000'000'000);
    // A measurement no longer than the fixed cost moves nothing: an error, not a division by 0.
    const CalibrationResult bad = parse_h2d(R"({"bandwidth_GBps": 55, "alpha_ns": 2617,
"beside_gather": {"bytes": 64, "time_ns": 2000}})");
    REQUIRE(bad.diagnostics.size() == 1);
    CHECK(bad.diagnostics[0].message ==
          "'h2d.beside_gather' must move bytes in more than 'h2d.alpha_ns' (2617 ns), got 64 bytes "
          "in 2000 ns");
  }

  TEST_CASE("calibration: h2d.alpha_ns must be a number >= 0") {
    const CalibrationResult r = parse_h2d(R"({"bandwidth_GBps": 50, "alpha_ns": -1})");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(first_error(r) ==
          "cal.json:3:31: error: expected a number between 0 and 1e18 for 'h2d.alpha_ns', got -1");
  }

  TEST_CASE("calibration: errors point at the input") {
    SUBCASE("syntax") {
      CHECK(first_error(parse_calibration("cal.json", "{\n  \"format\": ,\n}")) ==
            "cal.json:2:13: error: invalid JSON: syntax error while parsing value - unexpected "
            "','; expected '[', '{', or a literal");
    }
    SUBCASE("wrong format") {
      CHECK(first_error(parse_calibration("cal.json", "{\"format\": \"other\"}")) ==
            "cal.json:1:2: error: expected \"format\": \"zfetch-calibration\", got \"other\"");
    }
    SUBCASE("missing and mistyped keys") {
      const CalibrationResult r = parse_calibration("cal.json", R"({"format": "zfetch-calibration",
"version": 1,
"allgather": {"alpha_ns": "ten", "busbw_GBps": 100}})");
      REQUIRE(r.diagnostics.size() == 2);
      CHECK(first_error(r) ==
            "cal.json:3:15: error: expected a number for 'allgather.alpha_ns', "
            "got string");
      CHECK(r.diagnostics[0].length == 10);
      CHECK(r.diagnostics[1].message == "missing required key 'h2d'");
      CHECK(!r.calibration);
    }
    SUBCASE("negative bandwidth") {
      const CalibrationResult r = parse_calibration("cal.json", R"({"format": "zfetch-calibration",
"version": 1, "allgather": {"alpha_ns": 1, "busbw_GBps": -3}, "h2d": {"bandwidth_GBps": 1}})");
      CHECK(first_error(r) ==
            "cal.json:2:44: error: expected a number between 0 and 1e9 for "
            "'allgather.busbw_GBps', got -3");
    }
    SUBCASE("unsupported version") {
      const CalibrationResult r = parse_calibration(
          "cal.json", R"({"format": "zfetch-calibration", "version": 2, "allgather": {"alpha_ns": 1,
"busbw_GBps": 3}, "h2d": {"bandwidth_GBps": 1}})");
      CHECK(first_error(r) ==
            "cal.json:1:34: error: unsupported calibration version 2 (this build reads 1)");
    }
    SUBCASE("unreadable file") {
      CHECK(
          first_error(load_calibration_file("/nonexistent/cal.json")) ==
          "/nonexistent/cal.json: error: cannot read calibration file: No such file or directory");
    }
  }

  TEST_CASE("calibration: the built-in defaults parse and are listed") {
    const auto names = builtin_calibration_names();
    REQUIRE(names.size() >= 3);
    CHECK(names[0] == "h100x8-nvlink");
    CHECK(names[1] == "h200x1");
    CHECK(names[2] == "h200x2");
    for (std::string_view name : names) {
      CAPTURE(name);
      const CalibrationResult r = builtin_calibration(name);
      CHECK(r.diagnostics.empty());
      CHECK(r.calibration->h2d_bytes_per_s > 0);
    }
    CHECK(first_error(builtin_calibration("h300"))
              .starts_with("command line: error: unknown calibration 'h300'; valid values are: "
                           "h100x8-nvlink, "
                           "h200x1, h200x2"));
    // The default follows the world size: the measured machine of that size where there is one.
    model::Scenario s;
    for (const int64_t world : {1, 2, 4, 8}) {
      CAPTURE(world);
      s.world_size = world;
      const CalibrationResult r = resolve_calibration(s);
      REQUIRE(r.calibration.has_value());
      CHECK(r.calibration->world_size == (world <= 2 ? world : 8));
      CHECK(r.calibration->machine.find(world <= 2 ? "H200" : "H100") != std::string::npos);
      // What outputs print is the name, which names no hardware.
      CHECK(r.calibration->name == (world == 1   ? "measured-hopper-1gpu"
                                    : world == 2 ? "measured-hopper-2gpu"
                                                 : "published-8gpu-nvlink"));
    }
  }
}

}  // namespace
}  // namespace zfetch::sim
