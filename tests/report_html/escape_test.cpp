// escape_html: markup characters become entities and the result is valid UTF-8 whatever bytes
// a trace name holds.
#include <catch2/catch.hpp>

#include "report_html/escape.h"

using dpro::report_html::escape_html;

TEST_CASE("escape_html turns markup characters and quotes into entities") {
  CHECK(escape_html("<script>alert('x & \"y\"')</script>") ==
        "&lt;script&gt;alert(&#39;x &amp; &quot;y&quot;&#39;)&lt;/script&gt;");
  CHECK(escape_html("void at::native::vectorized_elementwise_kernel<4, float>") ==
        "void at::native::vectorized_elementwise_kernel&lt;4, float&gt;");
}

TEST_CASE("escape_html keeps valid UTF-8 and replaces each invalid byte with U+FFFD") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(escape_html("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  CHECK(escape_html("a\xFF" "b") == "a" + fffd + "b");                  // never a UTF-8 byte
  CHECK(escape_html("\x80") == fffd);                                    // stray continuation byte
  CHECK(escape_html("\xC0\xAF") == fffd + fffd);                         // overlong '/'
  CHECK(escape_html("\xED\xA0\x80") == fffd + fffd + fffd);              // a UTF-16 surrogate
  CHECK(escape_html("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);   // above U+10FFFF
  CHECK(escape_html("x\xE2\x82") == "x" + fffd + fffd);                  // truncated at the end
  CHECK(escape_html(std::string("a\0b\x1b", 4)) == "a" + fffd + "b" + fffd);  // control characters
  CHECK(escape_html("tab\there\nline") == "tab\there\nline");
}
