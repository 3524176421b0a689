// Host names outside ASCII: RFC 3492's Punycode, both ways,
// and the canonical form rules and requests share.
#include <catch2/catch_test_macros.hpp>

#include <random>

#include "policy/hosts.hpp"
#include "policy/idn.hpp"

using namespace nsrun;

namespace {

struct Sample {
  const char* name;
  std::u32string_view code_points;
  std::string_view encoded;
};

// RFC 3492 section 7.1, every sample.
const Sample samples[] = {
    {"A Arabic (Egyptian)", U"\U00000644\U0000064a\U00000647\U00000645\U00000627\U00000628\U0000062a\U00000643\U00000644\U00000645\U00000648\U00000634\U00000639\U00000631\U00000628\U0000064a\U0000061f", "egbpdaj6bu4bxfgehfvwxn"},
    {"B Chinese (simplified)", U"\U00004ed6\U00004eec\U00004e3a\U00004ec0\U00004e48\U00004e0d\U00008bf4\U00004e2d\U00006587", "ihqwcrb4cv8a8dqg056pqjye"},
    {"C Chinese (traditional)", U"\U00004ed6\U00005011\U00007232\U00004ec0\U00009ebd\U00004e0d\U00008aaa\U00004e2d\U00006587", "ihqwctvzc91f659drss3x8bo0yb"},
    {"D Czech", U"\U00000050\U00000072\U0000006f\U0000010d\U00000070\U00000072\U0000006f\U00000073\U00000074\U0000011b\U0000006e\U00000065\U0000006d\U0000006c\U00000075\U00000076\U000000ed\U0000010d\U00000065\U00000073\U0000006b\U00000079", "Proprostnemluvesky-uyb24dma41a"},
    {"E Hebrew", U"\U000005dc\U000005de\U000005d4\U000005d4\U000005dd\U000005e4\U000005e9\U000005d5\U000005d8\U000005dc\U000005d0\U000005de\U000005d3\U000005d1\U000005e8\U000005d9\U000005dd\U000005e2\U000005d1\U000005e8\U000005d9\U000005ea", "4dbcagdahymbxekheh6e0a7fei0b"},
    {"F Hindi (Devanagari)", U"\U0000092f\U00000939\U00000932\U0000094b\U00000917\U00000939\U0000093f\U00000928\U0000094d\U00000926\U00000940\U00000915\U0000094d\U0000092f\U0000094b\U00000902\U00000928\U00000939\U00000940\U00000902\U0000092c\U0000094b\U00000932\U00000938\U00000915\U00000924\U00000947\U00000939\U00000948\U00000902", "i1baa7eci9glrd9b2ae1bj0hfcgg6iyaf8o0a1dig0cd"},
    {"G Japanese", U"\U0000306a\U0000305c\U0000307f\U00003093\U0000306a\U000065e5\U0000672c\U00008a9e\U00003092\U00008a71\U00003057\U00003066\U0000304f\U0000308c\U0000306a\U00003044\U0000306e\U0000304b", "n8jok5ay5dzabd5bym9f0cm5685rrjetr6pdxa"},
    {"H Korean", U"\U0000c138\U0000acc4\U0000c758\U0000baa8\U0000b4e0\U0000c0ac\U0000b78c\U0000b4e4\U0000c774\U0000d55c\U0000ad6d\U0000c5b4\U0000b97c\U0000c774\U0000d574\U0000d55c\U0000b2e4\U0000ba74\U0000c5bc\U0000b9c8\U0000b098\U0000c88b\U0000c744\U0000ae4c", "989aomsvi5e83db1d2a355cv1e0vak1dwrv93d5xbh15a0dt30a5jpsd879ccm6fea98c"},
    {"I Russian", U"\U0000043f\U0000043e\U00000447\U00000435\U0000043c\U00000443\U00000436\U00000435\U0000043e\U0000043d\U00000438\U0000043d\U00000435\U00000433\U0000043e\U00000432\U0000043e\U00000440\U0000044f\U00000442\U0000043f\U0000043e\U00000440\U00000443\U00000441\U00000441\U0000043a\U00000438", "b1abfaaepdrnnbgefbadotcwatmq2g4l"},
    {"J Spanish", U"\U00000050\U0000006f\U00000072\U00000071\U00000075\U000000e9\U0000006e\U0000006f\U00000070\U00000075\U00000065\U00000064\U00000065\U0000006e\U00000073\U00000069\U0000006d\U00000070\U0000006c\U00000065\U0000006d\U00000065\U0000006e\U00000074\U00000065\U00000068\U00000061\U00000062\U0000006c\U00000061\U00000072\U00000065\U0000006e\U00000045\U00000073\U00000070\U00000061\U000000f1\U0000006f\U0000006c", "PorqunopuedensimplementehablarenEspaol-fmd56a"},
    {"K Vietnamese", U"\U00000054\U00001ea1\U00000069\U00000073\U00000061\U0000006f\U00000068\U00001ecd\U0000006b\U00000068\U000000f4\U0000006e\U00000067\U00000074\U00000068\U00001ec3\U00000063\U00000068\U00001ec9\U0000006e\U000000f3\U00000069\U00000074\U00000069\U00001ebf\U0000006e\U00000067\U00000056\U00000069\U00001ec7\U00000074", "TisaohkhngthchnitingVit-kjcr8268qyxafd2f1b9g"},
    {"L 3<nen>B<gumi><kinpachi><sensei>", U"\U00000033\U00005e74\U00000042\U00007d44\U000091d1\U0000516b\U00005148\U0000751f", "3B-ww4c5e180e575a65lsy2b"},
    {"M <amuro><namie>-with-SUPER-MONKEYS", U"\U00005b89\U00005ba4\U00005948\U00007f8e\U00006075\U0000002d\U00000077\U00000069\U00000074\U00000068\U0000002d\U00000053\U00000055\U00000050\U00000045\U00000052\U0000002d\U0000004d\U0000004f\U0000004e\U0000004b\U00000045\U00000059\U00000053", "-with-SUPER-MONKEYS-pc58ag80a8qai00g7n9n"},
    {"N Hello-Another-Way-<sorezore><no><basho>", U"\U00000048\U00000065\U0000006c\U0000006c\U0000006f\U0000002d\U00000041\U0000006e\U0000006f\U00000074\U00000068\U00000065\U00000072\U0000002d\U00000057\U00000061\U00000079\U0000002d\U0000305d\U0000308c\U0000305e\U0000308c\U0000306e\U00005834\U00006240", "Hello-Another-Way--fc4qua05auwb3674vfr0b"},
    {"O <hitotsu><yane><no><shita>2", U"\U00003072\U00003068\U00003064\U00005c4b\U00006839\U0000306e\U00004e0b\U00000032", "2-u9tlzr9756bt3uc0v"},
    {"P Maji<de>Koi<suru>5<byou><mae>", U"\U0000004d\U00000061\U0000006a\U00000069\U00003067\U0000004b\U0000006f\U00000069\U00003059\U0000308b\U00000035\U000079d2\U0000524d", "MajiKoi5-783gue6qz075azm5e"},
    {"Q <pafii>de<runba>", U"\U000030d1\U000030d5\U000030a3\U000030fc\U00000064\U00000065\U000030eb\U000030f3\U000030d0", "de-jg4avhby1noc0d"},
    {"R <sono><supiido><de>", U"\U0000305d\U0000306e\U000030b9\U000030d4\U000030fc\U000030c9\U00003067", "d9juau41awczczp"},
    {"S -> $1.00 <-", U"\U0000002d\U0000003e\U00000020\U00000024\U00000031\U0000002e\U00000030\U00000030\U00000020\U0000003c\U0000002d", "-> $1.00 <--"},
};

}  // namespace

TEST_CASE("punycode: the RFC 3492 samples encode and decode", "[idn]") {
  for (const auto& s : samples) {
    INFO(s.name);
    auto encoded = idn::punycode_encode(s.code_points);
    REQUIRE(encoded);
    CHECK(*encoded == s.encoded);
    auto decoded = idn::punycode_decode(s.encoded);
    REQUIRE(decoded);
    CHECK(*decoded == s.code_points);
  }
}

TEST_CASE("punycode: malformed input is refused, never crashes", "[idn]") {
  for (std::string_view bad : {"99999999999999", "zzzzzzzzzz9", "a-b-\xc3\xa9", "-abc", "abc-!", "b1abfaaepdrnnbgefbadotcwatmq2g4"})
    CHECK(!idn::punycode_decode(bad));
  // Overflowing deltas: a huge digit run.
  CHECK(!idn::punycode_decode(std::string(200, '9')));
  std::mt19937 rng(42);
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-";
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const std::size_t n = 1 + rng() % 20;
    for (std::size_t k = 0; k < n; ++k) s.push_back(alphabet[rng() % alphabet.size()]);
    auto d = idn::punycode_decode(s);
    if (d) {
      for (char32_t c : *d) CHECK(c <= 0x10ffff);
      CHECK(d->size() <= 256);
    }
  }
}

TEST_CASE("idn: a Unicode rule and an xn-- request match, and the other way round", "[idn]") {
  auto unicode = hosts::canonical_host("b\xc3\xbc" "cher.example");
  REQUIRE(unicode);
  CHECK(unicode->name == "xn--bcher-kva.example");
  auto ace = hosts::canonical_host("XN--BCHER-KVA.Example.");
  REQUIRE(ace);
  CHECK(ace->name == "xn--bcher-kva.example");

  auto rule = hosts::parse_pattern("b\xc3\xbc" "cher.example");
  REQUIRE(rule);
  CHECK(rule->text == "xn--bcher-kva.example");
  CHECK(hosts::matches(*rule, *ace, 443));
  auto rule_ace = hosts::parse_pattern("*.xn--bcher-kva.example:443");
  REQUIRE(rule_ace);
  auto sub = hosts::canonical_host("www.b\xc3\xbc" "cher.example");
  REQUIRE(sub);
  CHECK(hosts::matches(*rule_ace, *sub, 443));
  // Other scripts the table holds: Cyrillic, CJK, Hangul.
  auto ru = hosts::canonical_host("\xd0\xbf\xd1\x80\xd0\xb8\xd0\xbc\xd0\xb5\xd1\x80.\xd1\x80\xd1\x84");  // пример.рф
  REQUIRE(ru);
  CHECK(ru->name == "xn--e1afmkfd.xn--p1ai");
  auto cjk = hosts::canonical_host("\xe4\xbe\x8b\xe5\xad\x90.test");  // 例子.test
  REQUIRE(cjk);
  CHECK(cjk->name == "xn--fsqu00a.test");
  auto ko = hosts::canonical_host("\xed\x95\x9c\xea\xb5\xad.test");  // 한국.test
  REQUIRE(ko);
  CHECK(ko->name == "xn--3e0b707e.test");
}

TEST_CASE("idn: anything that would need mapping nsrun cannot do is refused", "[idn]") {
  for (std::string_view bad : {
           "B\xc3\x9c" "cher.example",        // Ü: upper case outside ASCII
           "bu\xcc\x88" "cher.example",       // u + combining diaeresis (NFC would compose it)
           "\xef\xbd\x85xample.test",         // full-width e
           "example\xe3\x80\x82test",         // ideographic full stop as a dot
           "caf\xc3\xa9\xe2\x84\xa2.test",    // a symbol (TM)
           "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d.test",  // Hebrew: bidi rules
           "\xc3\xb7.test",                   // division sign
           "\xc3\x28.test",                   // invalid UTF-8
           "\xe0\x80\xaf.test",               // overlong
           "\xed\xa0\x80.test",               // a surrogate
           "\xc3",                            // cut short
           "xn--bcher-kva-.example",          // not Punycode nsrun writes
           "xn--zzzzzzzz.test",               // decodes outside the table
           "xn--abc-.test",                   // ASCII only behind xn--
           "xn--.test",
           "xn--bcher-2pa.test",              // Punycode of "bÜcher": upper case
       }) {
    INFO(bad);
    CHECK(!hosts::canonical_host(bad));
    CHECK(!hosts::parse_pattern(bad));
  }
  // ASCII labels with "--" elsewhere stay as they are (real hosts use them).
  auto dashes = hosts::canonical_host("r3---sn-abc.googlevideo.com");
  REQUIRE(dashes);
  CHECK(dashes->name == "r3---sn-abc.googlevideo.com");
}
