// A sink that reduces a trace to a 64-bit digest: equal traces, equal digests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "trace/event.h"
#include "trace/sink.h"

namespace zfetch::sim {

/// A 64-bit hash over every field a trace file holds, event by event, in order: two runs
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
  // One multiply-xorshift round per 64-bit word (the fields are words; names go 8 bytes at a
  // time): hashing byte by byte was three quarters of a fuzz campaign's time.
  void add(uint64_t v) {
    hash_ = (hash_ ^ v) * 0x9e3779b97f4a7c15ULL;
    hash_ ^= hash_ >> 29;
  }
  void add(std::string_view text) {
    add(static_cast<uint64_t>(text.size()));
    size_t i = 0;
    for (; i + 8 <= text.size(); i += 8) {
      uint64_t word = 0;
      std::memcpy(&word, text.data() + i, 8);
      add(word);
    }
    if (i < text.size()) {
      uint64_t tail = 0;
      std::memcpy(&tail, text.data() + i, text.size() - i);
      add(tail);
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
