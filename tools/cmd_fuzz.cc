// zfetch fuzz: generated scenarios checked against the oracles; failures shrunk and written.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "model/scenario_writer.h"
#include "sim/explore/campaign.h"
#include "sim/explore/generator.h"
#include "sim/explore/oracles.h"
#include "sim/explore/shrink.h"
#include "tools/cli_numbers.h"
#include "tools/commands.h"

namespace zfetch::tools {
namespace {

// Without --runs or --time, a run checks this many scenarios (about two seconds on one core).
constexpr uint64_t kDefaultRuns = 10'000;

struct FuzzCliOptions {
  uint64_t seed = 1;
  std::optional<double> time_s;
  std::optional<uint64_t> runs;
  unsigned jobs = 1;
  std::string shard = "0/1";
  std::string out;
  std::string policy = "resident-skip";
  std::string profile = "full";
  bool json = false;
  std::optional<uint64_t> emit;
  uint64_t round_trip_every = 16;
  size_t shrink = 1;
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "command line: error: %s\n", message.c_str());
  return kExitBadInput;
}

bool parse_shard(const std::string& text, uint32_t& k, uint32_t& n) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) {
    return false;
  }
  try {
    size_t used = 0;
    const unsigned long a = std::stoul(text.substr(0, slash), &used);
    if (used != slash) {
      return false;
    }
    const std::string rest = text.substr(slash + 1);
    const unsigned long b = std::stoul(rest, &used);
    if (used != rest.size() || b == 0 || a >= b || b > UINT32_MAX) {
      return false;
    }
    k = static_cast<uint32_t>(a);
    n = static_cast<uint32_t>(b);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Writes `text` to `path`; false (after a message) when any step of the write fails.
bool write_file(const std::filesystem::path& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::fprintf(stderr, "zfetch fuzz: error: cannot write '%s'\n", path.c_str());
    return false;
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    std::fprintf(stderr, "zfetch fuzz: error: failed writing '%s'\n", path.c_str());
    return false;
  }
  return true;
}

bool make_dir(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    std::fprintf(stderr, "zfetch fuzz: error: cannot create '%s': %s\n", dir.c_str(),
                 error.message().c_str());
    return false;
  }
  return true;
}

std::string class_counts(const std::array<uint64_t, sim::kFailureClasses>& counts) {
  std::string text;
  for (size_t c = 1; c < sim::kFailureClasses; ++c) {  // pass is implied
    if (counts[c] > 0) {
      text += fmt::format("{}{} {}", text.empty() ? "" : ", ",
                          format_as(static_cast<sim::FailureClass>(c)), counts[c]);
    }
  }
  return text.empty() ? "no failures" : text;
}

// --emit: N generated scenarios that the generic runner builds, as YAML files.
int emit(const FuzzCliOptions& options, uint32_t shard, uint32_t shards) {
  if (options.out.empty()) {
    return usage_error("--emit needs --out DIR");
  }
  if (!make_dir(options.out)) {
    return kExitBadInput;
  }
  for (uint64_t j = 0; j < *options.emit; ++j) {
    const uint64_t index = shard + static_cast<uint64_t>(shards) * j;
    const model::Scenario scenario =
        sim::generate_scenario(options.seed, index, sim::GeneratorProfile::Runner);
    const std::filesystem::path path =
        std::filesystem::path(options.out) / fmt::format("{}.yaml", scenario.name);
    if (!write_file(path, model::write_scenario_yaml(scenario))) {
      return kExitBadInput;
    }
  }
  std::printf("wrote %llu scenarios (seed %llu, runner profile) to %s\n",
              static_cast<unsigned long long>(*options.emit),
              static_cast<unsigned long long>(options.seed), options.out.c_str());
  return kExitOk;
}

struct Shrunk {
  sim::Finding finding;
  sim::ScenarioSize before;
  sim::ScenarioSize after;
  std::string file;  ///< "" when not written
  std::string outcome;
};

// The first finding of each oracle, shrunk to a small scenario that fails the same way.
std::vector<Shrunk> shrink_findings(const sim::CampaignResult& result,
                                    const sim::CampaignOptions& campaign,
                                    const FuzzCliOptions& options, bool& write_failed) {
  std::vector<Shrunk> out;
  const auto tested = static_cast<size_t>(campaign.oracles.policy);
  size_t of_this_oracle = 0;
  for (size_t k = 0; k < result.findings.size(); ++k) {
    const sim::Finding& f = result.findings[k];
    const bool same_oracle = k > 0 && result.findings[k - 1].violation.oracle == f.violation.oracle;
    of_this_oracle = same_oracle ? of_this_oracle + 1 : 0;
    // A scenario can break one oracle under both policies: shrink it once.
    const bool same_scenario = same_oracle && result.findings[k - 1].index == f.index;
    if (of_this_oracle >= options.shrink || same_scenario) {
      continue;
    }
    const model::Scenario original =
        sim::generate_scenario(campaign.seed, f.index, campaign.profile);
    const auto same_failure = [&](const model::Scenario& candidate) {
      // The runner's scenarios stay buildable by it: DeepSpeed needs a trainable param.
      if (campaign.profile == sim::GeneratorProfile::Runner &&
          std::none_of(candidate.params.begin(), candidate.params.end(),
                       [](const model::ParamSpec& p) { return !p.frozen; })) {
        return false;
      }
      const sim::Verdict v = sim::check_scenario(candidate, campaign.oracles);
      if (v.runs[tested].failure_class != f.failure_class) {
        return false;
      }
      for (const sim::Violation& violation : v.violations) {
        if (violation.oracle == f.violation.oracle && violation.policy == f.violation.policy) {
          return true;
        }
      }
      return false;
    };
    const sim::ShrinkResult shrunk = sim::shrink_scenario(original, same_failure);
    Shrunk s{f, sim::scenario_size(original), sim::scenario_size(shrunk.scenario), "", ""};
    const sim::Verdict final_verdict = sim::check_scenario(shrunk.scenario, campaign.oracles);
    s.outcome = std::string(format_as(final_verdict.runs[tested].outcome));
    if (!options.out.empty()) {
      model::Scenario written = shrunk.scenario;
      written.name = fmt::format("{}-{}", format_as(f.violation.oracle), written.name);
      for (sim::Discovery d :
           {sim::Discovery::ResidentSkip, sim::Discovery::ResidencyIndependent}) {
        model::PolicyExpectation e;
        e.policy = d;
        e.expect.outcome = final_verdict.run(d).outcome;
        written.expectations.push_back(e);
      }
      const std::string file =
          (std::filesystem::path(options.out) / fmt::format("{}.yaml", written.name))
              .generic_string();
      const std::string text =
          fmt::format(
              "# Found by `zfetch fuzz --seed {} --policy {}` (scenario {}), shrunk from "
              "{} modules and {} operations\n# oracle {}: {}\n# reproduce: zfetch run {} "
              "--discovery {}\n",
              campaign.seed, format_as(campaign.oracles.policy), f.index, s.before.modules,
              s.before.operations, format_as(f.violation.oracle), f.violation.detail, file,
              format_as(campaign.oracles.policy)) +
          model::write_scenario_yaml(written);
      if (write_file(file, text)) {
        s.file = file;
      } else {
        write_failed = true;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json to_json(const sim::CampaignResult& result, const sim::CampaignOptions& campaign,
                       const std::vector<Shrunk>& shrunk, double seconds) {
  nlohmann::json j;
  j["format"] = "zfetch-fuzz";
  j["version"] = 1;
  j["seed"] = campaign.seed;
  j["runs"] = campaign.runs;
  j["shard"] = fmt::format("{}/{}", campaign.shard, campaign.shards);
  j["policy"] = std::string(format_as(campaign.oracles.policy));
  j["profile"] = campaign.profile == sim::GeneratorProfile::Runner ? "runner" : "full";
  j["scenarios"] = result.scenarios;
  j["seconds"] = seconds;
  for (sim::Discovery d : {sim::Discovery::ResidentSkip, sim::Discovery::ResidencyIndependent}) {
    nlohmann::json classes = nlohmann::json::object();
    for (size_t c = 0; c < sim::kFailureClasses; ++c) {
      classes[std::string(format_as(static_cast<sim::FailureClass>(c)))] =
          result.classes[static_cast<size_t>(d)][c];
    }
    j["classes"][std::string(format_as(d))] = classes;
  }
  nlohmann::json violations = nlohmann::json::object();
  for (size_t o = 0; o < result.violations.size(); ++o) {
    violations[std::string(format_as(static_cast<sim::Oracle>(o + 1)))] = result.violations[o];
  }
  j["violations"] = violations;
  j["findings"] = nlohmann::json::array();
  for (const sim::Finding& f : result.findings) {
    j["findings"].push_back({{"index", f.index},
                             {"oracle", std::string(format_as(f.violation.oracle))},
                             {"policy", std::string(format_as(f.violation.policy))},
                             {"class", std::string(format_as(f.failure_class))},
                             {"detail", f.violation.detail}});
  }
  j["shrunk"] = nlohmann::json::array();
  for (const Shrunk& s : shrunk) {
    j["shrunk"].push_back({{"index", s.finding.index},
                           {"oracle", std::string(format_as(s.finding.violation.oracle))},
                           {"modules", s.after.modules},
                           {"operations", s.after.operations},
                           {"outcome", s.outcome},
                           {"file", s.file}});
  }
  return j;
}

int run(const FuzzCliOptions& options) {
  uint32_t shard = 0;
  uint32_t shards = 1;
  if (!parse_shard(options.shard, shard, shards)) {
    return usage_error("expected --shard K/N with 0 <= K < N, got '" + options.shard + "'");
  }
  const std::optional<sim::Discovery> policy = model::kDiscoveryNames.find(options.policy);
  if (!policy) {
    return usage_error("unknown policy '" + options.policy +
                       "'; valid values are: resident-skip, residency-independent");
  }
  if (options.profile != "full" && options.profile != "runner") {
    return usage_error("unknown profile '" + options.profile + "'; valid values are: full, runner");
  }
  if (options.emit) {
    return emit(options, shard, shards);
  }
  if (options.time_s && options.runs) {
    return usage_error("give --time or --runs, not both");
  }
  sim::CampaignOptions campaign;
  campaign.seed = options.seed;
  campaign.runs = options.time_s ? 0 : options.runs.value_or(kDefaultRuns);
  campaign.shard = shard;
  campaign.shards = shards;
  campaign.jobs = options.jobs;
  campaign.profile =
      options.profile == "runner" ? sim::GeneratorProfile::Runner : sim::GeneratorProfile::Full;
  campaign.oracles.policy = *policy;
  campaign.round_trip_every = options.round_trip_every;
  if (!options.out.empty() && !make_dir(options.out)) {
    return kExitBadInput;
  }

  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const bool tty = isatty(fileno(stderr)) != 0 && !options.json;
  const size_t tested = static_cast<size_t>(*policy);
  const sim::CampaignResult result = sim::run_campaign(campaign, [&](const auto& so_far) {
    if (tty) {
      const double s = elapsed();
      std::fprintf(stderr, "\r\033[K%llu runs, %.0f/s, %s",
                   static_cast<unsigned long long>(so_far.scenarios),
                   s > 0 ? static_cast<double>(so_far.scenarios) / s : 0.0,
                   class_counts(so_far.classes[tested]).c_str());
    }
    return !options.time_s || elapsed() < *options.time_s;
  });
  const double seconds = elapsed();
  if (tty) {
    std::fprintf(stderr, "\r\033[K");
  }
  bool write_failed = false;
  const std::vector<Shrunk> shrunk = shrink_findings(result, campaign, options, write_failed);

  if (options.json) {
    std::printf("%s\n", to_json(result, campaign, shrunk, seconds).dump(1).c_str());
  } else {
    std::printf(
        "zfetch fuzz --seed %llu --shard %u/%u --policy %s: %llu scenarios in %.1f s "
        "(%.0f/s on %u job%s)\n",
        static_cast<unsigned long long>(campaign.seed), shard, shards, options.policy.c_str(),
        static_cast<unsigned long long>(result.scenarios), seconds,
        seconds > 0 ? static_cast<double>(result.scenarios) / seconds : 0.0, campaign.jobs,
        campaign.jobs == 1 ? "" : "s");
    for (sim::Discovery d : {sim::Discovery::ResidentSkip, sim::Discovery::ResidencyIndependent}) {
      std::printf("  %-22s %s\n", fmt::format("{}:", format_as(d)).c_str(),
                  class_counts(result.classes[static_cast<size_t>(d)]).c_str());
    }
    if (result.total_violations() == 0) {
      std::printf("no oracle violated under %s\n", options.policy.c_str());
    }
    for (size_t o = 0; o < result.violations.size(); ++o) {
      if (result.violations[o] == 0) {
        continue;
      }
      const auto oracle = static_cast<sim::Oracle>(o + 1);
      std::printf("oracle %zu (%s) violated %llu times under %s\n", o + 1,
                  std::string(format_as(oracle)).c_str(),
                  static_cast<unsigned long long>(result.violations[o]), options.policy.c_str());
      for (const Shrunk& s : shrunk) {
        if (s.finding.violation.oracle != oracle) {
          continue;
        }
        std::printf("  scenario %llu (%s): %s\n", static_cast<unsigned long long>(s.finding.index),
                    std::string(format_as(s.finding.failure_class)).c_str(),
                    s.finding.violation.detail.c_str());
        std::printf(
            "  shrunk from %zu modules, %zu operations to %zu modules, %zu operations "
            "(%s)%s%s\n",
            s.before.modules, s.before.operations, s.after.modules, s.after.operations,
            s.outcome.c_str(), s.file.empty() ? "" : ": ", s.file.c_str());
        if (!s.file.empty()) {
          std::printf("  reproduce: zfetch run %s --discovery %s\n", s.file.c_str(),
                      options.policy.c_str());
        }
      }
    }
  }
  if (write_failed) {
    return kExitBadInput;
  }
  return result.total_violations() > 0 ? kExitMismatch : kExitOk;
}

}  // namespace

void setup_fuzz(CLI::App& sub, std::function<int()>& action) {
  auto options = std::make_shared<FuzzCliOptions>();
  sub.add_option("--seed", options->seed, "seed of the scenario stream (printed; reproduces it)")
      ->check(decimal_unsigned());
  sub.add_option("--time", options->time_s, "run for SECONDS instead of a number of scenarios")
      ->check(positive_seconds());
  sub.add_option(
         "--runs", options->runs,
         fmt::format("scenarios of the whole campaign, all shards (default {})", kDefaultRuns))
      ->check(decimal_unsigned(1));
  sub.add_option("--jobs", options->jobs, "worker threads (results do not depend on it)")
      ->check(decimal_unsigned(1, 1024));
  sub.add_option("--shard", options->shard,
                 "K/N: check only the scenarios whose index is K modulo N");
  sub.add_option("--out", options->out, "folder for shrunk failures (and --emit's scenarios)");
  sub.add_option("--policy", options->policy,
                 "the discovery policy under test: resident-skip (default) or "
                 "residency-independent");
  sub.add_option("--profile", options->profile,
                 "full (default): everything the simulator models; runner: what the real "
                 "DeepSpeed runner builds");
  sub.add_option("--shrink", options->shrink,
                 "shrink the first N failures of each oracle (default 1, at most 8)")
      ->check(CLI::Range(0, 8));
  sub.add_flag("--json", options->json, "print the summary as JSON");
  sub.add_option("--emit", options->emit,
                 "write N generated scenarios (runner profile) to --out and check nothing")
      ->check(decimal_unsigned(0, 1'000'000));
  sub.add_option("--round-trip-every", options->round_trip_every,
                 "check oracle 5 (YAML and trace round trips) on every Nth scenario (default "
                 "16; 1: all, 0: none)")
      ->check(decimal_unsigned());
  action = [options] { return run(*options); };
}

}  // namespace zfetch::tools
