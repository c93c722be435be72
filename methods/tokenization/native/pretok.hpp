// Native pre-tokenizers: hand-written scanners that split text exactly as the regular
// expressions of GPT-2 (HF ByteLevel), cl100k_base and o200k_base do in HF tokenizers and
// tiktoken, plus the encode pipeline (split, then BPE per piece).
//
// A scanner reads code points through `at(k)`; reading past the end of the available text
// marks the piece uncertain, because more text could change it. Streaming encoders stop at the
// first uncertain piece and keep its text for the next call.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core.hpp"

namespace incbpe {

enum class Split { Whole = 0, Gpt2 = 1, Cl100k = 2, O200k = 3 };

// Unicode class bits, as written by tools/gen_unicode.py
enum Cls : u16 {
    C_L = 1,
    C_N = 2,
    C_S = 4,
    C_LU = 8,
    C_LL = 16,
    C_LT = 32,
    C_LM = 64,
    C_LO = 128,
    C_M = 256,
    C_END = 512,  // past the end of the text
};

u16 unicode_class(u32 cp);

//: Decoded text: code points, their classes and byte offsets (offset[n] = byte length).
struct Decoded {
    std::vector<u32> cp;
    std::vector<u16> cls;
    std::vector<u32> offset;
    void decode(const u8* data, size_t size);
};

//: Piece ends (in code points) of decoded text; stops before the first uncertain piece when
//: `eof` is false. Returns the number of code points covered by certain pieces.
size_t split_pieces(Split kind, const Decoded& text, bool eof, std::vector<u32>& ends);

struct PipelineOptions {
    Split split = Split::Whole;
    u32 unknown_id = NONE;    // id for bytes outside the vocabulary; NONE drops them
    bool fuse_unknown = false;
    bool whole_piece_lookup = false;  // a piece that is itself a token is that token (tiktoken)
};

class Pipeline {
   public:
    Pipeline(const Vocabulary& vocab, PipelineOptions options);
    //: Encode UTF-8 `text`; with eof=false only the certain pieces, reporting the bytes used.
    std::vector<u32> encode(const u8* data, size_t size, bool eof, size_t* consumed) const;
    //: BPE per piece of pre-split bytes (offsets: piece ends, ascending).
    std::vector<u32> encode_pieces(const u8* data, const u64* ends, size_t n_pieces) const;
    const Vocabulary& vocab() const { return *vocab_; }
    const PipelineOptions& options() const { return options_; }

   private:
    void encode_one(const u8* data, size_t size, std::vector<u32>& out, std::vector<u32>& tok,
                    std::vector<u16>& len, std::vector<u32>& fid) const;
    const Vocabulary* vocab_;
    PipelineOptions options_;
    std::unordered_map<std::string, u32> whole_;  // non-canonical tokens, for whole pieces
    size_t whole_max_ = 0;
};

}  // namespace incbpe
