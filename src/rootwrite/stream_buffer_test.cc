#include "rootwrite/stream_buffer.h"

#include <gtest/gtest.h>

#include "rootio/cursor.h"
#include "rootio/key.h"
#include "rootio/object_stream.h"
#include "rootwrite/key_header.h"

namespace ferry::rootwrite {
namespace {

TEST(StreamBuffer, ObjectByteCountCoversWhatFollowsTheCountWord) {
  StreamBuffer b;
  size_t at = b.BeginObject(13);
  b.I32(7);
  b.U8(1);
  b.EndObject(at);
  ASSERT_EQ(b.size(), 4u + 2 + 4 + 1);
  rootio::Cursor c(b.bytes());
  rootio::Framed f = rootio::ReadFramed(c);
  EXPECT_TRUE(f.counted);
  EXPECT_EQ(f.version, 13);
  EXPECT_EQ(f.end, b.size());
  EXPECT_EQ(b.bytes()[0], 0x40);  // kByteCountMask
}

TEST(StreamBuffer, TStringUsesTheLongFormFrom255Bytes) {
  StreamBuffer b;
  b.TString("abc");
  b.TString(std::string(254, 'x'));
  b.TString(std::string(255, 'y'));
  b.TString(std::string(70000, 'z'));
  rootio::Cursor c(b.bytes());
  EXPECT_EQ(c.TString(), "abc");
  EXPECT_EQ(c.TString().size(), 254u);
  EXPECT_EQ(b.bytes()[4 + 255], 255);  // the 255-byte string starts with the marker
  EXPECT_EQ(c.TString(), std::string(255, 'y'));
  EXPECT_EQ(c.TString().size(), 70000u);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.remaining(), 0u);
}

TEST(StreamBuffer, ClassTagsAndObjectReferencesAreKeyPositionsPlusTwo) {
  constexpr uint32_t kKeyLen = 61;
  StreamBuffer b(kKeyLen);
  b.I32(0);  // something before the first object
  size_t first = b.BeginPointer("TLeafI");
  size_t obj = b.BeginObject(1);
  b.I32(42);
  b.EndObject(obj);
  b.EndObject(first);
  size_t second = b.BeginPointer("TLeafI");  // same class: a class reference
  size_t obj2 = b.BeginObject(1);
  b.I32(43);
  b.EndObject(obj2);
  b.EndObject(second);
  b.Reference(b.TagAt(first));  // a reference to the first object
  b.NullPointer();

  // New class word right after the first byte count; its tag is kKeyLen + 8 + 2.
  EXPECT_EQ(LoadBE<uint32_t>(b.bytes().data() + 8), kNewClassTag);
  const size_t class_ref_at = second + 4;
  EXPECT_EQ(LoadBE<uint32_t>(b.bytes().data() + class_ref_at),
            kClassMask | (kKeyLen + 8 + kMapOffset));
  EXPECT_EQ(b.TagAt(first), kKeyLen + 4 + kMapOffset);

  // ferry's reader resolves both the class reference and the object reference.
  rootio::Cursor c(b.bytes());
  rootio::TagReader tags(kKeyLen);
  c.Skip(4);
  auto t1 = tags.Read(c);
  ASSERT_TRUE(t1.has_value());
  EXPECT_EQ(t1->kind, rootio::ObjectTag::Kind::kNew);
  EXPECT_EQ(t1->class_name, "TLeafI");
  EXPECT_EQ(t1->map_tag, b.TagAt(first));
  c.Seek(t1->end);
  auto t2 = tags.Read(c);
  ASSERT_TRUE(t2.has_value());
  EXPECT_EQ(t2->class_name, "TLeafI");
  c.Seek(t2->end);
  auto t3 = tags.Read(c);
  ASSERT_TRUE(t3.has_value());
  EXPECT_EQ(t3->kind, rootio::ObjectTag::Kind::kReference);
  EXPECT_EQ(t3->reference, b.TagAt(first));
  auto t4 = tags.Read(c);
  ASSERT_TRUE(t4.has_value());
  EXPECT_EQ(t4->kind, rootio::ObjectTag::Kind::kNull);
}

TEST(StreamBuffer, TNamedIsFramedTObjectNameTitle) {
  StreamBuffer b;
  b.TNamed("Jet_pt", "Jet_pt[nJet]");
  rootio::Cursor c(b.bytes());
  std::string name, title;
  ASSERT_TRUE(rootio::ReadTNamed(c, &name, &title).has_value());
  EXPECT_EQ(name, "Jet_pt");
  EXPECT_EQ(title, "Jet_pt[nJet]");
  EXPECT_EQ(c.remaining(), 0u);
}

TEST(KeyHeader, SmallAndWideFormsParseBack) {
  for (bool wide : {false, true}) {
    StreamBuffer b;
    KeyHeader k;
    k.class_name = "TBasket";
    k.name = "Jet_pt";
    k.title = "Events";
    k.nbytes = 1234;
    k.objlen = 4000;
    k.datime = PackDatime(1700000000);
    k.cycle = wide ? 0 : 3;
    k.seek_key = wide ? 5000000000ull : 300;
    k.seek_pdir = 100;
    k.wide = wide;
    uint16_t len = KeyHeaderLength(wide, k.class_name, k.name, k.title);
    WriteKeyHeader(b, k, len);
    ASSERT_EQ(b.size(), len);
    rootio::Cursor c(b.bytes());
    auto parsed = rootio::ParseKey(c);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
    EXPECT_EQ(parsed->version, wide ? 1004 : 4);
    EXPECT_EQ(parsed->nbytes, 1234);
    EXPECT_EQ(parsed->objlen, 4000);
    EXPECT_EQ(parsed->keylen, len);
    EXPECT_EQ(parsed->cycle, k.cycle);
    EXPECT_EQ(parsed->seek_key, k.seek_key);
    EXPECT_EQ(parsed->seek_pdir, 100u);
    EXPECT_EQ(parsed->class_name, "TBasket");
    EXPECT_EQ(parsed->name, "Jet_pt");
    EXPECT_EQ(parsed->title, "Events");
  }
}

TEST(KeyHeader, DatimePacksCalendarFields) {
  std::tm tm{};
  tm.tm_year = 2016 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 1;
  tm.tm_hour = 12;
  tm.tm_min = 34;
  tm.tm_sec = 56;
  tm.tm_isdst = -1;
  uint32_t d = PackDatime(std::mktime(&tm));
  EXPECT_EQ(d >> 26, 2016u - 1995u);
  EXPECT_EQ((d >> 22) & 0xF, 7u);
  EXPECT_EQ((d >> 17) & 0x1F, 1u);
  EXPECT_EQ((d >> 12) & 0x1F, 12u);
  EXPECT_EQ((d >> 6) & 0x3F, 34u);
  EXPECT_EQ(d & 0x3F, 56u);
}

}  // namespace
}  // namespace ferry::rootwrite
