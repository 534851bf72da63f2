#include "rootio/object_stream.h"

namespace ferry::rootio {

Framed ReadFramed(Cursor& c) {
  Framed f;
  f.start = c.pos();
  uint32_t word = c.U32();
  if ((word & kByteCountMask) != 0) {
    f.counted = true;
    f.end = c.pos() + (word & ~kByteCountMask);
    f.version = c.I16();
  } else {
    c.Seek(f.start);
    f.version = c.I16();
  }
  return f;
}

Status SkipToEnd(Cursor& c, const Framed& f, const char* what) {
  if (!c.ok()) {
    return CorruptionError(std::string(what) + " truncated");
  }
  if (!f.counted) {
    return CorruptionError(std::string(what) + " has no byte count to skip by");
  }
  if (c.pos() > f.end || f.end > c.size()) {
    return CorruptionError(std::string(what) + " overruns its byte count");
  }
  c.Seek(f.end);
  return OkStatus();
}

void SkipTObject(Cursor& c) {
  int16_t version = c.I16();
  if ((version & 0x4000) != 0) {
    // Byte count in an old-style TObject: the short was the top of a count word.
    c.Skip(2);
    version = c.I16();
  }
  c.Skip(4);  // fUniqueID
  uint32_t bits = c.U32();
  if ((bits & (1u << 4)) != 0) {  // kIsReferenced
    c.Skip(2);
  }
}

Status ReadTNamed(Cursor& c, std::string* name, std::string* title) {
  Framed f = ReadFramed(c);
  SkipTObject(c);
  std::string_view n = c.TString();
  std::string_view t = c.TString();
  if (!c.ok()) {
    return CorruptionError("TNamed truncated");
  }
  *name = n;
  *title = t;
  if (f.counted) {
    return SkipToEnd(c, f, "TNamed");
  }
  return OkStatus();
}

Result<ObjectTag> TagReader::Read(Cursor& c) {
  ObjectTag t;
  size_t start = c.pos();
  uint32_t word = c.U32();
  if (!c.ok()) {
    return CorruptionError("object tag truncated");
  }
  if (word == 0) {
    return t;
  }
  uint32_t tag = word;
  size_t tag_pos = start;
  if ((word & kByteCountMask) != 0 && word != kNewClassTag) {
    t.end = c.pos() + (word & ~kByteCountMask);
    tag_pos = c.pos();
    tag = c.U32();
  }
  if ((tag & kClassMask) == 0) {
    t.kind = ObjectTag::Kind::kReference;
    t.reference = tag;
    return t;
  }
  t.kind = ObjectTag::Kind::kNew;
  t.map_tag = TagAt(start);
  if (tag == kNewClassTag) {
    std::string_view name = c.CString();
    if (!c.ok() || name.empty()) {
      return CorruptionError("class name in object tag truncated");
    }
    t.class_name = name;
    classes_[TagAt(tag_pos)] = t.class_name;
  } else {
    auto it = classes_.find(tag & ~kClassMask);
    if (it == classes_.end()) {
      return CorruptionError("reference to unknown class tag " + std::to_string(tag & ~kClassMask));
    }
    t.class_name = it->second;
  }
  if (t.end != 0 && t.end > c.size()) {
    return CorruptionError("object of class " + t.class_name + " overruns its record");
  }
  return t;
}

}  // namespace ferry::rootio
