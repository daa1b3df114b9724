// A sink that reduces a trace to a 64-bit digest: equal traces, equal digests.
#pragma once

#include <cstdint>
#include <string_view>

#include "trace/event.h"
#include "trace/sink.h"

namespace zfetch::sim {

/// FNV-1a (64-bit) over every field a trace file holds, event by event, in order: two runs
/// with the same digest wrote the same events (up to a 2^-64 collision). The in-memory
/// indices are not part of it, so a trace read back from a file digests the same.
class EventDigest final : public trace::EventSink {
 public:
  void on_event(const trace::Event& e) override {
    add(e.seq);
    add(static_cast<uint64_t>(e.t_ns));
    add(static_cast<uint64_t>(e.rank));
    add(static_cast<uint64_t>(e.engine));
    add(static_cast<uint64_t>(e.step));
    add(static_cast<uint64_t>(e.micro_step));
    add(static_cast<uint64_t>(e.phase));
    add(static_cast<uint64_t>(e.kind));
    add(static_cast<uint64_t>(e.trace_step));
    add(static_cast<uint64_t>(e.module_id));
    add(e.module);
    add(static_cast<uint64_t>(e.param_id));
    add(e.param);
    add(static_cast<uint64_t>(e.status));
    add(static_cast<uint64_t>(e.numel));
    add(static_cast<uint64_t>(e.bytes));
    add(static_cast<uint64_t>(e.group));
    ++events_;
  }

  [[nodiscard]] uint64_t digest() const { return hash_; }
  [[nodiscard]] uint64_t events() const { return events_; }

 private:
  void byte(uint8_t b) {
    hash_ ^= b;
    hash_ *= 0x100000001b3ULL;
  }
  void add(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      byte(static_cast<uint8_t>(v >> (8 * i)));
    }
  }
  void add(std::string_view text) {
    add(static_cast<uint64_t>(text.size()));
    for (char c : text) {
      byte(static_cast<uint8_t>(c));
    }
  }

  uint64_t hash_ = 0xcbf29ce484222325ULL;
  uint64_t events_ = 0;
};

/// Hands every event to two sinks.
class TeeSink final : public trace::EventSink {
 public:
  TeeSink(trace::EventSink& a, trace::EventSink& b) : a_(a), b_(b) {}
  void on_event(const trace::Event& e) override {
    a_.on_event(e);
    b_.on_event(e);
  }

 private:
  trace::EventSink& a_;
  trace::EventSink& b_;
};

}  // namespace zfetch::sim
