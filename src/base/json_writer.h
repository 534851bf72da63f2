// JsonWriter: a small streaming JSON emitter for ferry's --json outputs.
//
// Numbers follow the CLI contract: floats print with %.9g, doubles with %.17g (round-trip),
// and non-finite values as the bare tokens NaN, Infinity, -Infinity (what Python's json module
// reads). Commas and nesting are tracked by the writer; misuse is a programming error (assert).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {

class JsonWriter {
 public:
  // indent = 0 writes one line; > 0 pretty-prints with that many spaces per level.
  explicit JsonWriter(int indent = 0) : indent_(indent) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // Within an object: the next value's key.
  JsonWriter& Key(std::string_view key);

  JsonWriter& String(std::string_view s);
  JsonWriter& Int(int64_t v);
  JsonWriter& Uint(uint64_t v);
  JsonWriter& Float(float v);
  JsonWriter& Double(double v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  // Inserts pre-formatted JSON text as a value.
  JsonWriter& Raw(std::string_view json);

  // Convenience: Key(k) followed by a value.
  JsonWriter& Field(std::string_view k, std::string_view v) { return Key(k).String(v); }
  JsonWriter& Field(std::string_view k, const char* v) { return Key(k).String(v); }
  JsonWriter& Field(std::string_view k, int64_t v) { return Key(k).Int(v); }
  JsonWriter& Field(std::string_view k, uint64_t v) { return Key(k).Uint(v); }
  JsonWriter& Field(std::string_view k, int v) { return Key(k).Int(v); }
  JsonWriter& Field(std::string_view k, double v) { return Key(k).Double(v); }
  JsonWriter& Field(std::string_view k, bool v) { return Key(k).Bool(v); }

  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void BeforeValue();
  void Newline();

  std::string out_;
  int indent_;
  // Per nesting level: number of values written so far; a pending key suppresses the comma.
  std::vector<int> counts_;
  bool after_key_ = false;
};

// Appends s as a quoted, escaped JSON string.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace ferry
