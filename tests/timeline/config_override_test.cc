// set_config_value: the keys a sweep can set, value parsing, and error messages.
#include "model/config_override.h"

#include <doctest/doctest.h>

namespace zfetch::model {
namespace {

TEST_SUITE("timeline") {
  TEST_CASE("config_override: sets ds_config and scenario keys") {
    Scenario s;
    CHECK(!set_config_value(s, "stage3_prefetch_bucket_size", "5e7"));
    CHECK(s.config.zero.prefetch_bucket_size == 50'000'000);
    CHECK(!set_config_value(s, "zero_optimization.stage3_max_live_parameters", "1_000"));
    CHECK(s.config.zero.max_live_parameters == 1'000);
    CHECK(!set_config_value(s, "stage3_param_persistence_threshold", "0"));
    CHECK(s.config.zero.param_persistence_threshold == 0);
    CHECK(!set_config_value(s, "stage3_max_reuse_distance", "12"));
    CHECK(s.config.zero.max_reuse_distance == 12);
    CHECK(!set_config_value(s, "stage3_model_persistence_threshold", "7"));
    CHECK(s.config.zero.model_persistence_threshold == 7);
    CHECK(!set_config_value(s, "gradient_accumulation_steps", "4"));
    CHECK(s.config.gradient_accumulation_steps == 4);
    CHECK(!set_config_value(s, "world_size", "8"));
    CHECK(s.world_size == 8);
    CHECK(!set_config_value(s, "offload_param.device", "nvme"));
    CHECK(s.config.zero.offload_param.device == OffloadDevice::Nvme);
    CHECK(s.config.zero.offload_param_set);
    CHECK(!set_config_value(s, "offload_param.device", "none"));
    CHECK(s.config.zero.offload_param.device == OffloadDevice::None);
  }

  TEST_CASE("config_override: bad values and keys leave the scenario unchanged") {
    Scenario s;
    CHECK(set_config_value(s, "world_size", "0") ==
          "expected an integer >= 1 for 'world_size', got '0'");
    CHECK(
        set_config_value(s, "stage3_max_live_parameters", "1.5e-3") ==
        "expected an integer for 'stage3_max_live_parameters', got '1.5e-3' (not a whole number)");
    CHECK(set_config_value(s, "stage3_max_live_parameters", "99999999999999999999") ==
          "'99999999999999999999' for 'stage3_max_live_parameters' is out of range: expected an "
          "integer of at most 9223372036854775807");
    CHECK(set_config_value(s, "offload_param.device", "gpu") ==
          "invalid value 'gpu' for 'offload_param.device'; valid values are: none, cpu, nvme");
    CHECK(set_config_value(s, "stage3_prefetch_bucket_sise", "1") ==
          "unknown config key 'stage3_prefetch_bucket_sise', did you mean "
          "'stage3_prefetch_bucket_size'?");
    CHECK(set_config_value(s, "zzz", "1")
              ->starts_with(
                  "unknown config key 'zzz'; valid keys are: stage3_prefetch_bucket_size, "));
    CHECK(s.world_size == 1);
    CHECK(s.config.zero.max_live_parameters == 1'000'000'000);
  }

  TEST_CASE("config_override: integers with separators and exponents") {
    CHECK(parse_config_integer("0") == 0);
    CHECK(parse_config_integer("1e9") == 1'000'000'000);
    CHECK(parse_config_integer("9223372036854775807") == INT64_MAX);
    CHECK(parse_config_integer("-9223372036854775808") == INT64_MIN);
    CHECK(parse_config_integer("-1") == -1);
    CHECK(parse_config_integer("50_000_000") == 50'000'000);
    CHECK(parse_config_integer("1.5e3") == 1500);
    CHECK(parse_config_integer("15000e-3") == 15);
    CHECK(parse_config_integer("+2E+2") == 200);
    CHECK(parse_config_integer("0e999999999999") == 0);
    CHECK(parse_config_integer("9.223372036854775807e18") == INT64_MAX);
    std::string problem;
    for (const char* fraction : {"1.5", "1e-5", "15001e-3", "1e-999999999"}) {
      CHECK_MESSAGE(!parse_config_integer(fraction, &problem), fraction);
      CHECK(problem == "not a whole number");
    }
    for (const char* big : {"1e19", "9223372036854775808", "-9223372036854775809", "1e999999999999",
                            "123456789012345678901234567890"}) {
      CHECK_MESSAGE(!parse_config_integer(big, &problem), big);
      CHECK(problem == "out of range");
    }
    for (const char* text :
         {"", "_1", "1_", "1__0", "e5", "1e", "1.", ".5", "0x10", " 1", "1e5.0", "true", "--1"}) {
      CHECK_MESSAGE(!parse_config_integer(text, &problem), text);
      CHECK(problem == "not a number");
    }
  }

  TEST_CASE("config_override: a value that is no integer names the key and why") {
    Scenario s;
    CHECK(set_config_value(s, "stage3_max_live_parameters", "1.5") ==
          "expected an integer for 'stage3_max_live_parameters', got '1.5' (not a whole number)");
    CHECK(set_config_value(s, "world_size", "1e-5") ==
          "expected an integer for 'world_size', got '1e-5' (not a whole number)");
    CHECK(set_config_value(s, "world_size", "true") ==
          "expected an integer for 'world_size', got 'true' (not a number)");
    CHECK(set_config_value(s, "zero_optimization.stage3_max_live_parameters", "1e3") ==
          std::nullopt);
    CHECK(s.config.zero.max_live_parameters == 1000);
    CHECK(config_key_name("zero_optimization.offload_param.device") == "offload_param.device");
  }
}

}  // namespace
}  // namespace zfetch::model
