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
    //: Decode data[offset.back() .. size) after what is decoded already (streaming); a UTF-8
    //: sequence cut off by the end waits for more bytes unless `eof` (then, as in decode(),
    //: each of its bytes stands for itself). Returns how many code points were added.
    size_t append(const u8* data, size_t size, bool eof);
};

//: Piece ends (in code points) of decoded text; stops before the first uncertain piece when
//: `eof` is false. Returns the number of code points covered by certain pieces.
size_t split_pieces(Split kind, const Decoded& text, bool eof, std::vector<u32>& ends);

//: Runs (of letters, digits, spaces, ...) that reached the end of a shorter text: a later scan
//: of the grown text resumes each from where it stopped instead of reading it again.
struct RunMemo {
    struct Entry {
        size_t start, reached;
        u32 kind;
    };
    std::vector<Entry> entries;
    const Entry* find(size_t start, u32 kind) const {
        for (const Entry& e : entries)
            if (e.start == start && e.kind == kind) return &e;
        return nullptr;
    }
    void store(size_t start, u32 kind, size_t reached);
    //: Forget runs starting before `from`; shift the others down by `by` code points.
    void forget_before(size_t from, size_t by);
};

//: For streaming: per position k of decoded text, the last position before k holding \r or
//: \n, and the last with a lower-case-like class (o200k's [\p{Ll}\p{Lm}\p{Lo}\p{M}]), or
//: NONE; extended from `from` (entry k = 0 .. n).
void extend_tracks(const Decoded& text, std::vector<u32>& prev_newline,
                   std::vector<u32>& prev_lower);

//: What a streaming split knows: the ends of the certain pieces from code point `from` (into
//: `ends`) and, when the next piece is still open (`eof` false, its end depends on text not yet
//: seen), a lower bound on that end valid for every continuation (`*floor`; n when none is
//: open). Returns the start of the open piece (n when none). With `memo` and the tracks, a scan
//: of a grown text costs O(new text), however long the open piece.
size_t scan_pieces(Split kind, const Decoded& text, size_t from, bool eof, std::vector<u32>& ends,
                   size_t* floor, RunMemo* memo, const u32* prev_newline, const u32* prev_lower);

struct PipelineOptions {
    Split split = Split::Whole;
    u32 unknown_id = NONE;    // id for bytes outside the vocabulary; NONE drops them
    bool fuse_unknown = false;
    bool whole_piece_lookup = false;  // a piece that is itself a token is that token (tiktoken)
};

class PieceStream;

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
    friend class PieceStream;
    void encode_one(const u8* data, size_t size, std::vector<u32>& out, std::vector<u32>& tok,
                    std::vector<u16>& len, std::vector<u32>& fid) const;
    const Vocabulary* vocab_;
    PipelineOptions options_;
    std::unordered_map<std::string, u32> whole_;  // non-canonical tokens, for whole pieces
    size_t whole_max_ = 0;
};

//: The pipeline over text that arrives in parts, with eager output: pieces the splitter has
//: closed are encoded as `Pipeline::encode` would; the open piece's certain prefix (the bytes
//: that stay in it whatever follows) goes, new bytes only, into an `EagerEncoder`, whose
//: certain tokens come out at once. The split resumes from the open piece's start, reading each
//: byte O(1) times. Tokens taken, concatenated with those after finish(), equal
//: `Pipeline::encode` of all bytes fed.
class PieceStream {
   public:
    explicit PieceStream(const Pipeline& pipeline);
    void feed(const u8* data, size_t size);
    //: End of the text: every remaining token becomes certain; then a new text may be fed.
    void finish();
    //: Append the certain tokens not yet taken to `out`.
    void take(std::vector<u32>& out);
    void reset();
    //: Bytes fed whose tokens are not out yet.
    size_t pending_bytes() const;
    //: Bytes the split window holds (a long open piece keeps only its head and tail).
    size_t window_bytes() const { return bytes_.size(); }
    //: Most bytes of one open piece ever held undecided by the eager encoder.
    size_t max_eager_pending() const { return max_eager_pending_; }

   private:
    void process(bool eof);
    void close_piece(size_t a, size_t b);
    void extend_open(size_t a, size_t floor);
    void feed_eager(const u8* data, size_t size);
    void release(const std::vector<u32>& tokens);
    void compact();
    void trim();
    const Pipeline* pipe_;
    EagerEncoder eager_;
    bool tracks_;
    bool drop_unknown_ = false;  // unknown bytes are dropped before merging (HF without unk)
    bool known_[256];
    std::string bytes_;  // the text from the window's start (a cut-off UTF-8 sequence last)
    Decoded text_;
    std::vector<u32> prev_newline_, prev_lower_, ends_;
    RunMemo memo_;
    size_t piece_ = 0;  // first code point not in a closed piece
    bool open_ = false;  // the eager encoder holds the start of the piece at piece_
    size_t fed_ = 0;     // byte offset up to which that piece went to the eager encoder
    size_t fed_cp_ = 0;  // ... and the code point there
    size_t dropped_ = 0;  // bytes of the open piece's middle compact() took out of the window
    size_t eager_bytes_ = 0;
    bool released_ = false;  // the open piece is longer than any whole-piece token
    bool previous_unknown_ = false;
    size_t max_eager_pending_ = 0;
    std::vector<u32> held_, scratch_, ready_, tok_, fid_;
    std::vector<u16> len_;
    std::string kept_;
};

//: Python's `bytes.decode("utf-8", "replace")`, re-encoded: each maximal invalid subpart of
//: s[0 .. size) becomes U+FFFD. Returns where a sequence cut off by the end starts (size when
//: none; with `final` a cut sequence is replaced too). When nothing was replaced, `changed` is
//: false and `out` untouched (the bytes are already valid); else `out` holds the repaired
//: bytes up to the returned offset.
size_t repair_utf8(const u8* s, size_t size, bool final, std::string& out, bool& changed);

//: What `Tokenizer.encode` does before splitting, streamed: UTF-8 parts repaired as
//: `repair_utf8` (a sequence cut by the end of a part waits for the next), the text cut at
//: added tokens (leftmost, longest first, non-overlapping; one not allowed stays text), held
//: where an added token may still start, and a space put before each segment when the source
//: adds one. Segments stream through a `PieceStream`; with `collect` (split patterns without a
//: native scanner) each closed segment is kept whole and SEGMENT marks its place in the ids.
class TextStream {
   public:
    struct Added {
        std::string content;
        u32 id;
        bool allowed;
    };
    static constexpr u32 SEGMENT = 0xFFFFFFFEu;
    TextStream(const Pipeline& pipeline, std::vector<Added> added, bool add_prefix_space,
               bool collect);
    void feed(const u8* data, size_t size);
    //: The bytes of a cut-off sequence, removed from the stream (a `str` part follows).
    std::string take_cut();
    //: End of the text: every remaining token becomes certain; then a new text may be fed.
    void finish();
    void take(std::vector<u32>& out);
    //: With `collect`: the closed segments' bytes, in the order of their SEGMENT marks.
    std::vector<std::string> take_segments();
    size_t pending_bytes() const;
    const PieceStream& pieces() const { return pieces_; }
    void reset();

   private:
    void text(const u8* data, size_t size, bool final);
    void segment(const u8* data, size_t size);
    void end_segment();
    PieceStream pieces_;
    std::vector<Added> added_;  // longest first
    bool first_[256];
    bool matching_ = false;
    bool add_prefix_space_;
    bool collect_;
    bool started_ = false;
    size_t longest_ = 0;
    std::string cut_, held_, work_, repaired_, collected_;
    std::vector<std::string> segments_;
    std::vector<u32> ready_;
};

}  // namespace incbpe
