// libFuzzer target: arbitrary bytes read as a JSON Lines trace must never crash the reader.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "tests/fuzz/fuzz_check.h"
#include "trace/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  zfetch::trace::TraceReader reader(in, "fuzz");
  if (!reader.read_header()) {
    FUZZ_CHECK(reader.error().has_value());
    return 0;
  }
  // Touch every field that a consumer would, so that a dangling view shows up under ASan.
  const zfetch::trace::TraceHeader& header = reader.header();
  size_t checksum = header.scenario.size() + header.discovery.size();
  uint64_t last_line = reader.line();
  while (const zfetch::trace::Event* event = reader.next()) {
    checksum += event->module.size() + event->param.size();
    FUZZ_CHECK(reader.line() > last_line);
    last_line = reader.line();
  }
  if (reader.error()) {
    checksum += reader.error()->message.size();
    FUZZ_CHECK(!reader.error()->message.empty());
  }
  return checksum == SIZE_MAX ? 1 : 0;
}
