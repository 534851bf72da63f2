#include "rootio/rntuple_schema.h"

#include <string>

namespace ferry::rootio {
namespace {

// Reads a list frame of record frames, calling parse(cursor, item) -> Status for each; the
// cursor is moved to each record's end afterwards, so fields a newer writer appended are
// skipped. Truncation shows as the cursor's failure flag, which EndFrame reports.
template <class T, class Parse>
Status ReadRecordList(LeCursor& c, std::string_view what, std::vector<T>* out, Parse parse) {
  Frame list = FERRY_TRY(ReadFrame(c, /*want_list=*/true, what));
  // Every item is at least a record-frame preamble, so the count cannot outgrow the bytes.
  if (list.items > (list.end - c.pos()) / kRecordFramePreamble) {
    return CorruptionError(std::string(what) + ": " + std::to_string(list.items)
                           + " items cannot fit the list frame");
  }
  out->reserve(out->size() + list.items);
  for (uint32_t i = 0; i < list.items; ++i) {
    Frame rec = FERRY_TRY(ReadFrame(c, /*want_list=*/false, what));
    if (rec.end > list.end) {
      return CorruptionError(std::string(what) + ": record runs past its list frame");
    }
    T item;
    FERRY_TRY_CTX(parse(c, item), std::string(what));
    FERRY_TRY(EndFrame(c, rec, std::string(what) + " record " + std::to_string(i)));
    out->push_back(std::move(item));
  }
  return EndFrame(c, list, what);
}

Status ParseField(LeCursor& c, FieldRecord& f) {
  f.field_version = c.U32();
  f.type_version = c.U32();
  f.parent_id = c.U32();
  f.role = c.U16();
  f.flags = c.U16();
  f.name = c.String();
  f.type_name = c.String();
  f.type_alias = c.String();
  f.description = c.String();
  if (f.repetitive()) {
    f.array_size = c.U64();
  }
  if (f.projected()) {
    f.source_field_id = c.U32();
  }
  if ((f.flags & FieldFlags::kTypeChecksum) != 0) {
    f.type_checksum = c.U32();
  }
  return OkStatus();
}

Status ParseColumn(LeCursor& c, ColumnRecord& col) {
  col.type = c.U16();
  col.bits = c.U16();
  col.field_id = c.U32();
  col.flags = c.U16();
  col.representation = c.U16();
  if ((col.flags & ColumnFlags::kDeferred) != 0) {
    col.first_element = c.I64();
  }
  if ((col.flags & ColumnFlags::kRange) != 0) {
    col.min = c.F64();
    col.max = c.F64();
  }
  return OkStatus();
}

Status ParseSchema(LeCursor& c, std::string_view what, Schema* s) {
  FERRY_TRY(ReadRecordList(c, std::string(what) + " field list", &s->fields, ParseField));
  FERRY_TRY(ReadRecordList(c, std::string(what) + " column list", &s->columns, ParseColumn));
  FERRY_TRY(ReadRecordList(c, std::string(what) + " alias column list", &s->aliases,
                           [](LeCursor& r, AliasColumn& a) {
                             a.physical_id = r.U32();
                             a.field_id = r.U32();
                             return OkStatus();
                           }));
  return ReadRecordList(c, std::string(what) + " extra type info list", &s->extra,
                        [](LeCursor& r, ExtraTypeInfo& e) {
                          e.content_id = r.U32();
                          e.type_version = r.U32();
                          e.type_name = r.String();
                          return OkStatus();
                        });
}

Status ParseClusterGroup(LeCursor& c, ClusterGroup& g) {
  g.min_entry = c.U64();
  g.entry_span = c.U64();
  g.clusters = c.U32();
  g.link_at = c.pos();
  g.page_list.length = c.U64();
  g.page_list.locator = FERRY_TRY(ReadLocator(c, "page list link"));
  return OkStatus();
}

}  // namespace

Result<Header> ParseHeader(std::span<const uint8_t> payload, std::string_view what) {
  LeCursor c(payload);
  FERRY_TRY(ReadFeatureFlags(c, what));
  Header h;
  h.name = c.String();
  h.description = c.String();
  h.writer = c.String();
  if (!c.ok()) {
    return CorruptionError(std::string(what) + ": names truncated");
  }
  FERRY_TRY(ParseSchema(c, what, &h.schema));
  return h;
}

Result<Footer> ParseFooter(std::span<const uint8_t> payload, std::string_view what) {
  LeCursor c(payload);
  FERRY_TRY(ReadFeatureFlags(c, what));
  Footer f;
  f.header_checksum = c.U64();
  std::string ext_what = std::string(what) + " schema extension";
  Frame ext = FERRY_TRY(ReadFrame(c, /*want_list=*/false, ext_what));
  // An empty extension record holds no lists at all.
  if (ext.end > c.pos()) {
    FERRY_TRY(ParseSchema(c, ext_what, &f.extension));
  }
  FERRY_TRY(EndFrame(c, ext, ext_what));
  FERRY_TRY(
      ReadRecordList(c, std::string(what) + " cluster group list", &f.groups, ParseClusterGroup));
  return f;
}

}  // namespace ferry::rootio
