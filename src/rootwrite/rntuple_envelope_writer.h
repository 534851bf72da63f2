// Serialising RNTuple metadata: the header, footer and page-list envelopes (little-endian,
// each closed by its XXH3-64) and the ROOT::RNTuple anchor object (big-endian, as any streamed
// ROOT object). The inputs are the reader's structures (rootio/rntuple_schema.h,
// rntuple_page_list.h, rntuple_anchor.h), so each layout is declared once and every field
// the writer sets is one the reader parses. Format: docs/format/rntuple.md.
#pragma once

#include <cstdint>
#include <vector>

#include "rootio/rntuple_anchor.h"
#include "rootio/rntuple_page_list.h"
#include "rootio/rntuple_schema.h"

namespace ferry::rootwrite {

// The RNTuple format this writer produces, 1.0.0.0, and the anchor's class version (ROOT 6.34).
inline constexpr uint16_t kRntupleEpoch = 1;
inline constexpr int16_t kAnchorClassVersion = 2;
// ROOT's default largest key an RBlob may take (RNTupleWriteOptions::kDefaultMaxKeySize).
inline constexpr uint64_t kDefaultMaxKeySize = uint64_t{1} << 30;

// Whole uncompressed envelopes, preamble and checksum included. The checksum of a header
// envelope is EnvelopeChecksum(header), which the footer and page lists repeat.
std::vector<uint8_t> SerializeHeader(const rootio::Header& header);
std::vector<uint8_t> SerializeFooter(const rootio::Footer& footer);
std::vector<uint8_t> SerializePageList(const rootio::PageList& page_list);
uint64_t EnvelopeChecksum(const std::vector<uint8_t>& envelope);

// The anchor object (its key's payload): byte count, class version, the fields, the XXH3-64
// of the fields.
std::vector<uint8_t> SerializeAnchor(const rootio::Anchor& anchor);

}  // namespace ferry::rootwrite
