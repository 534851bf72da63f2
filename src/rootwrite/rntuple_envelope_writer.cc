#include "rootwrite/rntuple_envelope_writer.h"

#include "base/endian.h"
#include "base/hash.h"
#include "rootio/rntuple_envelope.h"
#include "rootwrite/rntuple_frame_writer.h"
#include "rootwrite/stream_buffer.h"

namespace ferry::rootwrite {
namespace {

using rootio::FieldFlags;

// The envelope preamble: type in bits 0-15, the whole envelope's length in bits 16-63. The
// length is known only at the end, so Seal fills the preamble in and appends the checksum.
LeWriter StartEnvelope() {
  LeWriter w;
  w.U64(0);
  return w;
}

std::vector<uint8_t> Seal(LeWriter& w, rootio::EnvelopeType type) {
  std::vector<uint8_t>& b = w.bytes();
  uint64_t length = b.size() + rootio::kEnvelopeChecksumSize;
  StoreLE<uint64_t>(b.data(), static_cast<uint64_t>(type) | (length << 16));
  w.U64(hash::Xxh3(b.data(), b.size()));
  return w.Take();
}

void WriteField(LeWriter& w, const rootio::FieldRecord& f) {
  auto frame = w.BeginRecord();
  w.U32(f.field_version);
  w.U32(f.type_version);
  w.U32(f.parent_id);
  w.U16(f.role);
  w.U16(f.flags);
  w.String(f.name);
  w.String(f.type_name);
  w.String(f.type_alias);
  w.String(f.description);
  if ((f.flags & FieldFlags::kRepetitive) != 0) {
    w.U64(f.array_size);
  }
  if ((f.flags & FieldFlags::kProjected) != 0) {
    w.U32(f.source_field_id);
  }
  if ((f.flags & FieldFlags::kTypeChecksum) != 0) {
    w.U32(f.type_checksum);
  }
  w.EndFrame(frame);
}

void WriteColumn(LeWriter& w, const rootio::ColumnRecord& c) {
  auto frame = w.BeginRecord();
  w.U16(c.type);
  w.U16(c.bits);
  w.U32(c.field_id);
  w.U16(c.flags);
  w.U16(c.representation);
  if ((c.flags & rootio::ColumnFlags::kDeferred) != 0) {
    w.I64(c.first_element);
  }
  if ((c.flags & rootio::ColumnFlags::kRange) != 0) {
    w.F64(c.min);
    w.F64(c.max);
  }
  w.EndFrame(frame);
}

// Writes each item of a list as a record frame inside one list frame.
template <class T, class Fn>
void WriteList(LeWriter& w, const std::vector<T>& items, Fn write_item) {
  auto list = w.BeginList(static_cast<uint32_t>(items.size()));
  for (const T& item : items) {
    write_item(w, item);
  }
  w.EndFrame(list);
}

// The four lists of a schema description (the header's, or the footer's extension).
void WriteSchema(LeWriter& w, const rootio::Schema& s) {
  WriteList(w, s.fields, WriteField);
  WriteList(w, s.columns, WriteColumn);
  WriteList(w, s.aliases, [](LeWriter& lw, const rootio::AliasColumn& a) {
    auto frame = lw.BeginRecord();
    lw.U32(a.physical_id);
    lw.U32(a.field_id);
    lw.EndFrame(frame);
  });
  WriteList(w, s.extra, [](LeWriter& lw, const rootio::ExtraTypeInfo& e) {
    auto frame = lw.BeginRecord();
    lw.U32(e.content_id);
    lw.U32(e.type_version);
    lw.String(e.type_name);
    lw.String("");  // the content: this writer produces no streamer fields
    lw.EndFrame(frame);
  });
}

void WriteColumnPages(LeWriter& w, const rootio::ColumnPages& column) {
  // Page items are not frames: an i32 element count (negated when a checksum follows the
  // page) and a locator; the column's element offset and compression close its list frame.
  auto list = w.BeginList(static_cast<uint32_t>(column.pages.size()));
  for (const rootio::PageInfo& p : column.pages) {
    auto n = static_cast<int32_t>(p.elements);
    w.I32(p.has_checksum ? -n : n);
    w.Locator(p.locator);
  }
  if (column.suppressed) {
    w.I64(INT64_MIN);
  } else {
    w.I64(static_cast<int64_t>(column.element_offset));
    w.U32(column.compression);
  }
  w.EndFrame(list);
}

}  // namespace

std::vector<uint8_t> SerializeHeader(const rootio::Header& header) {
  LeWriter w = StartEnvelope();
  w.FeatureFlags();
  w.String(header.name);
  w.String(header.description);
  w.String(header.writer);
  WriteSchema(w, header.schema);
  return Seal(w, rootio::EnvelopeType::kHeader);
}

std::vector<uint8_t> SerializeFooter(const rootio::Footer& footer) {
  LeWriter w = StartEnvelope();
  w.FeatureFlags();
  w.U64(footer.header_checksum);
  auto extension = w.BeginRecord();
  WriteSchema(w, footer.extension);
  w.EndFrame(extension);
  WriteList(w, footer.groups, [](LeWriter& lw, const rootio::ClusterGroup& g) {
    auto frame = lw.BeginRecord();
    lw.U64(g.min_entry);
    lw.U64(g.entry_span);
    lw.U32(g.clusters);
    lw.EnvelopeLink(g.page_list);
    lw.EndFrame(frame);
  });
  return Seal(w, rootio::EnvelopeType::kFooter);
}

std::vector<uint8_t> SerializePageList(const rootio::PageList& page_list) {
  LeWriter w = StartEnvelope();
  w.U64(page_list.header_checksum);
  WriteList(w, page_list.clusters, [](LeWriter& lw, const rootio::ClusterInfo& c) {
    auto frame = lw.BeginRecord();
    lw.U64(c.first_entry);
    lw.U64(c.entries);  // bits 56-63 are flags: none set
    lw.EndFrame(frame);
  });
  WriteList(w, page_list.clusters, [](LeWriter& lw, const rootio::ClusterInfo& c) {
    WriteList(lw, c.columns, WriteColumnPages);
  });
  return Seal(w, rootio::EnvelopeType::kPageList);
}

uint64_t EnvelopeChecksum(const std::vector<uint8_t>& envelope) {
  return LoadLE<uint64_t>(envelope.data() + envelope.size() - rootio::kEnvelopeChecksumSize);
}

std::vector<uint8_t> SerializeAnchor(const rootio::Anchor& a) {
  using L = rootio::AnchorLayout;
  StreamBuffer out;
  size_t start = out.BeginObject(kAnchorClassVersion);
  for (uint16_t v : {a.epoch, a.major, a.minor, a.patch}) {
    out.U16(v);
  }
  for (uint64_t v : {a.seek_header, a.nbytes_header, a.len_header, a.seek_footer, a.nbytes_footer,
                     a.len_footer, a.max_key_size}) {
    out.U64(v);
  }
  // The byte count covers the streamed members only: ROOT appends the checksum after the
  // object, and jsroot, which streams the members from the StreamerInfo, checks the count.
  out.EndObject(start);
  const std::vector<uint8_t>& b = out.bytes();
  out.U64(hash::Xxh3(b.data() + L::kChecksummedBegin, b.size() - L::kChecksummedBegin));
  return out.Take();
}

}  // namespace ferry::rootwrite
