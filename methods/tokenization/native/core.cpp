// Normalised dictionary, automaton, successor forest, candidate trees and the per-byte step.
// See core.hpp for the outline; comments here say why each step is correct.
#include "core.hpp"

#include <algorithm>
#include <chrono>
#include <new>
#ifdef __linux__
#include <sys/mman.h>
#endif
#include <cstdio>
#include <cstdlib>
#include <queue>

namespace incbpe {

constexpr size_t HUGE_PAGE = size_t(2) << 20;

void* huge_alloc(size_t bytes) {
    if (bytes < (size_t(1) << 20)) {
        void* p = ::operator new(bytes);
        return p;
    }
    size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void* p = std::aligned_alloc(HUGE_PAGE, rounded);
    if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

void huge_free(void* p, size_t bytes) noexcept {
    if (bytes < (size_t(1) << 20))
        ::operator delete(p);
    else
        std::free(p);
}

namespace {

u64 pair_key(u32 left, u32 right) { return (u64(left) << 32) | right; }

}  // namespace

// ---------------------------------------------------------------- standard BPE (reference)

MergeTable::MergeTable(const std::vector<std::string>& tokens, const std::vector<Rule>& rules)
    : tokens_(tokens), rules_(rules) {
    std::fill(std::begin(atom_), std::end(atom_), NONE);
    for (u32 id = 0; id < tokens_.size(); ++id) {
        const std::string& t = tokens_[id];
        if (t.size() == 1 && atom_[u8(t[0])] == NONE) atom_[u8(t[0])] = id;
    }
    pair_rule_.reserve(rules_.size() * 2);
    for (u32 i = 0; i < rules_.size(); ++i) {
        const Rule& r = rules_[i];
        if (r.left >= tokens_.size() || r.right >= tokens_.size() || r.result >= tokens_.size())
            throw std::invalid_argument("merge rule " + std::to_string(i) +
                                        " names a token id outside the vocabulary");
        if (tokens_[r.result] != tokens_[r.left] + tokens_[r.right])
            throw std::invalid_argument("merge rule " + std::to_string(i) + " makes token " +
                                        std::to_string(r.result) +
                                        ", which is not its two parts joined");
        pair_rule_[pair_key(r.left, r.right)] = i;  // a repeated pair: the last one wins (as HF)
    }
}

bool MergeTable::lookup(u32 left, u32 right, u32* priority, u32* result) const {
    auto it = pair_rule_.find(pair_key(left, right));
    if (it == pair_rule_.end()) return false;
    *priority = it->second;
    *result = rules_[it->second].result;
    return true;
}

std::vector<u32> MergeTable::encode(const std::string& bytes, size_t* unknown) const {
    // Segments between unknown bytes are independent; a heap of (priority, position) pairs
    // with lazy deletion gives the lowest-priority, leftmost merge each time.
    std::vector<u32> out;
    size_t n = bytes.size(), missing = 0;
    std::vector<u32> sym(n);
    std::vector<size_t> prev(n), next(n);
    std::vector<bool> gone(n, false);
    size_t start = 0;
    auto run_segment = [&](size_t lo, size_t hi) {
        if (lo >= hi) return;
        using Item = std::pair<u32, size_t>;  // (priority, position of the left symbol)
        std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
        for (size_t i = lo; i < hi; ++i) {
            prev[i] = i == lo ? NONE : i - 1;
            next[i] = i + 1 == hi ? NONE : i + 1;
        }
        u32 pr, res;
        for (size_t i = lo; i + 1 < hi; ++i)
            if (lookup(sym[i], sym[i + 1], &pr, &res)) heap.push({pr, i});
        while (!heap.empty()) {
            auto [priority, i] = heap.top();
            heap.pop();
            if (gone[i] || next[i] == size_t(NONE)) continue;
            size_t j = next[i];
            if (!lookup(sym[i], sym[j], &pr, &res) || pr != priority) continue;  // stale
            sym[i] = res;
            gone[j] = true;
            next[i] = next[j];
            if (next[j] != size_t(NONE)) prev[next[j]] = i;
            if (prev[i] != size_t(NONE) && lookup(sym[prev[i]], sym[i], &pr, &res))
                heap.push({pr, prev[i]});
            if (next[i] != size_t(NONE) && lookup(sym[i], sym[next[i]], &pr, &res))
                heap.push({pr, i});
        }
        for (size_t i = lo; i != size_t(NONE); i = next[i]) out.push_back(sym[i]);
    };
    for (size_t i = 0; i < n; ++i) {
        u32 a = atom_[u8(bytes[i])];
        if (a == NONE) {
            run_segment(start, i);
            ++missing;
            out.push_back(UNKNOWN);
            start = i + 1;
        } else {
            sym[i] = a;
        }
    }
    run_segment(start, n);
    if (unknown) *unknown = missing;
    return out;
}

std::vector<CanonicalRule> MergeTable::canonical_rules() const {
    // A token is canonical when BPE of its own bytes yields exactly it; the last merge of that
    // run is the only rule that can ever build it (the merges inside a token's span never
    // depend on its context), so every other rule producing it is dropped.
    std::vector<CanonicalRule> out;
    std::vector<u32> seq;
    std::vector<std::pair<u32, u32>> pair;
    for (u32 id = 0; id < tokens_.size(); ++id) {
        const std::string& t = tokens_[id];
        if (t.size() < 2 || t.size() > MAX_TOKEN_BYTES) continue;
        seq.clear();
        bool ok = true;
        for (char c : t) {
            u32 a = atom_[u8(c)];
            if (a == NONE) {
                ok = false;
                break;
            }
            seq.push_back(a);
        }
        if (!ok) continue;
        u32 last_pre = NONE, last_suc = NONE, last_priority = NONE;
        // pair[i]: (priority, result) of seq[i], seq[i + 1]; updated around each merge
        pair.resize(seq.size() - 1);
        auto look = [&](size_t i) {
            u32 pr = NONE, res = NONE;
            if (!lookup(seq[i], seq[i + 1], &pr, &res)) pr = NONE;
            pair[i] = {pr, res};
        };
        for (size_t i = 0; i + 1 < seq.size(); ++i) look(i);
        while (seq.size() > 1) {
            u32 best = NONE;
            size_t at = 0;
            for (size_t i = 0; i < pair.size(); ++i)
                if (pair[i].first < best) {
                    best = pair[i].first;
                    at = i;
                }
            if (best == NONE) break;
            last_pre = seq[at];
            last_suc = seq[at + 1];
            last_priority = best;
            seq[at] = pair[at].second;
            seq.erase(seq.begin() + at + 1);
            pair.erase(pair.begin() + at);
            if (at > 0) look(at - 1);
            if (at + 1 < seq.size()) look(at);
        }
        if (seq.size() == 1 && seq[0] == id && last_priority != NONE)
            out.push_back({id, last_pre, last_suc, last_priority});
    }
    std::sort(out.begin(), out.end(), [](const CanonicalRule& a, const CanonicalRule& b) {
        return a.priority < b.priority;
    });
    return out;
}

// ---------------------------------------------------------------- normalised vocabulary

Vocabulary::Vocabulary(const std::vector<std::string>& tokens, const std::vector<Rule>& rules)
    : tokens_(tokens) {
    MergeTable table(tokens, rules);
    std::vector<CanonicalRule> canon = table.canonical_rules();
    node_of_id_.assign(tokens_.size(), NONE);
    auto add_node = [&](u32 id, u32 pre, u32 suc, u32 priority) {
        node_of_id_[id] = u32(node_id_.size());
        node_id_.push_back(id);
        node_len_.push_back(u16(tokens_[id].size()));
        pre_.push_back(pre);
        suc_.push_back(suc);
        priority_.push_back(priority);
        suc_len_.push_back(suc == NONE ? 0 : node_len_[suc]);
        max_len_ = std::max<u32>(max_len_, u32(tokens_[id].size()));
    };
    for (int b = 0; b < 256; ++b)
        if (table.atom(u8(b)) != NONE) add_node(table.atom(u8(b)), NONE, NONE, NONE);
    for (const CanonicalRule& r : canon) {
        u32 pre = node_of_id_[r.pre], suc = node_of_id_[r.suc];
        // Proper order: a token's rule comes after the rules of both of its parts. Otherwise
        // the validity ranges below would not describe when the rule can fire.
        if (pre == NONE || suc == NONE) {
            u32 missing = pre == NONE ? r.pre : r.suc;
            throw ImproperDictionary("improper merge order: token " + std::to_string(r.token) +
                                     " (rule " + std::to_string(r.priority) +
                                     ") is built from token " + std::to_string(missing) +
                                     ", which a later rule builds");
        }
        add_node(r.token, pre, suc, r.priority);
    }
    auto t0 = std::chrono::steady_clock::now();
    build_forest();
    auto t1 = std::chrono::steady_clock::now();
    build_automaton();
    auto t2 = std::chrono::steady_clock::now();
    build_candidate_trees();
    info_.resize(node_id_.size());
    for (u32 x = 0; x < node_id_.size(); ++x)
        info_[x] = {range_lo_[x], range_hi_[x], fid_[x], node_id_[x], cd_root_[x], node_len_[x],
                    suc_len_[x]};
    auto t3 = std::chrono::steady_clock::now();
    if (std::getenv("INCBPE_PROFILE")) {  // build times, for tuning
        auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
        std::fprintf(stderr, "forest %.0f ms, automaton %.0f ms, candidate trees %.0f ms\n",
                     ms(t0, t1), ms(t1, t2), ms(t2, t3));
    }
}

void Vocabulary::build_forest() {
    // parent(x) = suc(x); children ordered by descending priority (rules that fire later
    // first), so the children of `pre` whose rule fires after x's form a prefix of the list and
    // their subtrees one pre-order interval starting at id(pre).
    size_t n = node_id_.size();
    std::vector<std::vector<u32>> children(n);
    for (u32 x = 0; x < n; ++x)
        if (suc_[x] != NONE) children[suc_[x]].push_back(x);
    for (auto& list : children)
        std::sort(list.begin(), list.end(),
                  [&](u32 a, u32 b) { return priority_[a] > priority_[b]; });
    fid_.assign(n, NONE);
    std::vector<u32> subtree_end(n, 0);
    u32 counter = 0;
    std::vector<std::pair<u32, size_t>> stack;  // (node, next child index)
    for (u32 root = 0; root < n; ++root) {
        if (suc_[root] != NONE) continue;
        stack.push_back({root, 0});
        fid_[root] = counter++;
        while (!stack.empty()) {
            auto& [node, k] = stack.back();
            if (k < children[node].size()) {
                u32 child = children[node][k++];
                fid_[child] = counter++;
                stack.push_back({child, 0});
            } else {
                subtree_end[node] = counter;
                stack.pop_back();
            }
        }
    }
    range_lo_.assign(n, NONE);
    range_hi_.assign(n, 0);
    for (u32 x = 0; x < n; ++x) {
        if (pre_[x] == NONE) continue;
        const auto& siblings = children[pre_[x]];
        // first child of pre whose rule fires no later than x's: it (or x itself when
        // pre == suc) would have taken `pre` before x's rule could
        auto it = std::lower_bound(siblings.begin(), siblings.end(), priority_[x],
                                   [&](u32 c, u32 pr) { return priority_[c] > pr; });
        range_lo_[x] = fid_[pre_[x]];
        range_hi_[x] = it == siblings.end() ? subtree_end[pre_[x]] : fid_[*it];
    }
}

void Vocabulary::build_automaton() {
    // Trie of the canonical tokens, then breadth-first suffix links and full transition rows.
    // A row is 16 tiles of 16 targets; a state shares its suffix-link state's tiles and copies
    // only those where it has trie children of its own.
    std::vector<u32> terminal{NONE};
    std::vector<u16> depth{0};
    std::vector<u32> parent{NONE};
    std::vector<u8> via{0};
    std::vector<std::vector<std::pair<u8, u32>>> kids(1);
    u32 root_child[256];
    std::fill(std::begin(root_child), std::end(root_child), NONE);
    for (u32 x = 0; x < node_id_.size(); ++x) {
        const std::string& t = tokens_[node_id_[x]];
        u32 s = 0;
        for (char ch : t) {
            u8 c = u8(ch);
            u32 next = NONE;
            if (s == 0) {
                next = root_child[c];
            } else {
                for (auto [b, child] : kids[s])
                    if (b == c) {
                        next = child;
                        break;
                    }
            }
            if (next == NONE) {
                next = u32(terminal.size());
                terminal.push_back(NONE);
                depth.push_back(u16(depth[s] + 1));
                parent.push_back(s);
                via.push_back(c);
                kids.emplace_back();
                kids[s].push_back({c, next});
                if (s == 0) root_child[c] = next;
            }
            s = next;
        }
        terminal[s] = x;
    }
    size_t states = terminal.size();
    std::vector<u32> fail(states, 0);
    states_.assign(states, State{});
    longest_.assign(states, NONE);
    depth_.assign(depth.begin(), depth.end());
    tiles_.clear();
    // root: 16 tiles of its own, every byte leads back to the root unless a child exists
    for (int h = 0; h < 16; ++h) {
        std::array<u32, 16> tile;
        tile.fill(0);
        states_[0].tiles[h] = u32(tiles_.size());
        tiles_.push_back(tile);
    }
    for (auto [b, child] : kids[0]) tiles_[states_[0].tiles[b >> 4]][b & 15] = child;
    std::vector<u32> order{0};
    order.reserve(states);
    for (size_t head = 0; head < order.size(); ++head) {
        u32 s = order[head];
        if (s != 0) {
            u32 f = parent[s] == 0 ? 0 : delta(fail[parent[s]], via[s]);
            fail[s] = f;
            states_[s].tiles = states_[f].tiles;
            bool own[16] = {false};
            for (auto [b, child] : kids[s]) {
                int h = b >> 4;
                if (!own[h]) {
                    std::array<u32, 16> copy = tiles_[states_[s].tiles[h]];
                    states_[s].tiles[h] = u32(tiles_.size());
                    tiles_.push_back(copy);
                    own[h] = true;
                }
                tiles_[states_[s].tiles[h]][b & 15] = child;
            }
            longest_[s] = terminal[s] != NONE ? terminal[s] : longest_[f];
        }
        for (auto [b, child] : kids[s]) order.push_back(child);
    }
    // the canonical suffix chain of each node (for its candidate tree)
    node_state_.assign(node_id_.size(), 0);
    for (u32 s = 1; s < states; ++s)
        if (terminal[s] != NONE) node_state_[terminal[s]] = s;
    shorter_suffix_.assign(node_id_.size(), NONE);
    for (u32 x = 0; x < node_id_.size(); ++x)
        shorter_suffix_[x] = longest_[fail[node_state_[x]]];
    relabel_states(parent, order);
    // The eager encoder's walks rely on this: a byte that no token holds has no trie edge, so
    // every state's entry for it is the root's, 0 (its longest token is NONE).
    for (int b = 0; b < 256; ++b) {
        if (longest_[delta(0, u8(b))] != NONE) continue;
        for (u32 s = 0; s < states_.size(); ++s)
            if (delta(s, u8(b)) != 0) throw std::logic_error("automaton: an unknown byte leaves the root");
    }
}

void Vocabulary::relabel_states(const std::vector<u32>& parent, const std::vector<u32>& order) {
    // Heavy-path layout: states renumbered in depth-first order, largest subtree first, so a
    // match that extends a token walks through neighbouring rows; tiles in order of first use.
    size_t states = states_.size();
    std::vector<std::vector<u32>> children(states);
    std::vector<u32> subtree(states, 1);
    for (size_t h = order.size(); h-- > 1;) subtree[parent[order[h]]] += subtree[order[h]];
    for (size_t h = 1; h < order.size(); ++h) children[parent[order[h]]].push_back(order[h]);
    std::vector<u32> renamed(states, NONE), stack{0};
    u32 counter = 0;
    while (!stack.empty()) {
        u32 s = stack.back();
        stack.pop_back();
        renamed[s] = counter++;
        auto& kids = children[s];
        std::sort(kids.begin(), kids.end(), [&](u32 a, u32 b) { return subtree[a] < subtree[b]; });
        stack.insert(stack.end(), kids.begin(), kids.end());  // the heaviest is taken next
    }
    HugeVector<State> rows(states);
    HugeVector<u32> longest(states);
    HugeVector<u16> depth(states);
    std::vector<u32> tile_renamed(tiles_.size(), NONE);
    HugeVector<std::array<u32, 16>> tiles;
    tiles.reserve(tiles_.size());
    std::vector<u32> by_new(states);
    for (u32 s = 0; s < states; ++s) by_new[renamed[s]] = s;
    for (u32 n = 0; n < states; ++n) {
        u32 s = by_new[n];
        for (int h = 0; h < 16; ++h) {
            u32 t = states_[s].tiles[h];
            if (tile_renamed[t] == NONE) {
                tile_renamed[t] = u32(tiles.size());
                std::array<u32, 16> entries = tiles_[t];
                for (u32& e : entries) e = renamed[e];
                tiles.push_back(entries);
            }
            rows[n].tiles[h] = tile_renamed[t];
        }
        longest[n] = longest_[s];
        depth[n] = depth_[s];
    }
    states_.swap(rows);
    longest_.swap(longest);
    depth_.swap(depth);
    tiles_.swap(tiles);
}

void Vocabulary::build_candidate_trees() {
    // Tree of the canonical suffixes of T (closed under suc), centroid-decomposed: a centroid
    // keeps its parent-side component and its child components sorted by validity range.
    cd_root_.assign(node_id_.size(), NONE);
    std::vector<u32> members;
    std::vector<u32> index_of_len;
    std::vector<u32> tree_parent;
    std::vector<std::vector<u32>> tree_children;
    std::vector<char> removed;
    std::vector<u32> comp, comp_parent, size, where;
    for (u32 x = 0; x < node_id_.size(); ++x) {
        if (pre_[x] == NONE) continue;
        members.clear();
        for (u32 y = x; y != NONE; y = shorter_suffix_[y]) members.push_back(y);
        size_t m = members.size();
        index_of_len.assign(node_len_[x] + 1, NONE);
        for (u32 i = 0; i < m; ++i) index_of_len[node_len_[members[i]]] = i;
        tree_parent.assign(m, NONE);
        tree_children.assign(m, {});
        for (u32 i = 0; i < m; ++i) {
            u32 y = members[i];
            if (suc_[y] == NONE) continue;
            u32 p = index_of_len[node_len_[suc_[y]]];
            if (p == NONE || members[p] != suc_[y]) throw std::logic_error("suffix tree broken");
            tree_parent[i] = p;
            tree_children[p].push_back(i);
        }
        removed.assign(m, 0);
        size.assign(m, 1);
        where.assign(m, NONE);
        // recursive decomposition; each call touches only its own component
        std::function<u32(u32)> build = [&](u32 entry) -> u32 {
            comp.clear();
            comp_parent.clear();
            comp.push_back(entry);
            comp_parent.push_back(NONE);
            for (size_t h = 0; h < comp.size(); ++h) {
                u32 v = comp[h];
                u32 p = tree_parent[v];
                if (p != NONE && !removed[p] && p != comp_parent[h]) {
                    comp.push_back(p);
                    comp_parent.push_back(v);
                }
                for (u32 c : tree_children[v])
                    if (!removed[c] && c != comp_parent[h]) {
                        comp.push_back(c);
                        comp_parent.push_back(v);
                    }
            }
            size_t total = comp.size();
            for (u32 h = 0; h < total; ++h) {
                where[comp[h]] = h;
                size[comp[h]] = 1;
            }
            for (size_t h = total; h-- > 1;) size[comp_parent[h]] += size[comp[h]];
            u32 centroid = comp[0];
            for (u32 h = 0; h < total; ++h) {
                u32 v = comp[h];
                size_t biggest = total - size[v];
                u32 p = tree_parent[v];
                for (u32 c : tree_children[v])
                    if (!removed[c] && comp_parent[where[c]] == v)
                        biggest = std::max<size_t>(biggest, size[c]);
                if (p != NONE && !removed[p] && comp_parent[where[p]] == v)
                    biggest = std::max<size_t>(biggest, size[p]);
                if (biggest * 2 <= total) {
                    centroid = v;
                    break;
                }
            }
            removed[centroid] = 1;
            u32 me = u32(cnodes_.size());
            u32 cn = members[centroid];
            cnodes_.push_back(
                {range_lo_[cn], range_hi_[cn], cn, NONE, 0, 0, NONE, 0, 0, suc_len_[cn], node_len_[cn]});
            u32 parent_side = NONE;
            if (tree_parent[centroid] != NONE && !removed[tree_parent[centroid]])
                parent_side = build(tree_parent[centroid]);
            std::vector<CChild> kids;
            for (u32 c : tree_children[centroid])
                if (!removed[c]) {
                    u32 target = build(c);
                    u32 node = members[c];
                    kids.push_back({range_lo_[node], range_hi_[node], target});
                }
            std::sort(kids.begin(), kids.end(),
                      [](const CChild& a, const CChild& b) { return a.lo < b.lo; });
            cnodes_[me].parent_side = parent_side;
            cnodes_[me].child_begin = u32(cchildren_.size());
            cnodes_[me].child_count = u16(kids.size());
            if (kids.size() == 1) {
                cnodes_[me].child_lo = kids[0].lo;
                cnodes_[me].child_hi = kids[0].hi;
                cnodes_[me].child_target = kids[0].target;
            }
            cchildren_.insert(cchildren_.end(), kids.begin(), kids.end());
            return me;
        };
        cd_root_[x] = build(0);
    }
}

template <class FidAt>
u32 Vocabulary::last_token(u32 x, size_t p, const FidAt& fid_at) const {
    const NodeInfo& nx = info_[x];
    if (nx.suc_len == 0) return x;
    // Fast path: the longest token ending here is itself the last token (most bytes of text).
    u32 cur = nx.cd_root;
    __builtin_prefetch(&cnodes_[cur]);  // the slow path's first read, overlapped
    u32 w = fid_at(p - nx.suc_len);
    if (nx.lo <= w && w < nx.hi) return x;
    // Otherwise the answer is the deepest node of the valid root path of x's candidate tree.
    for (;;) {
        ++centroid_steps;
        const CNode& c = cnodes_[cur];
        bool valid = true;
        if (c.suc_len != 0) {
            u32 v = fid_at(p - c.suc_len);
            valid = c.lo <= v && v < c.hi;
        }
        if (!valid) {
            if (c.parent_side == NONE) return c.node;  // cannot happen when normalised
            cur = c.parent_side;
            continue;
        }
        if (c.child_count == 0) return c.node;
        // all children of the centroid share suc = it: one value decides which (at most one)
        u32 v = fid_at(p - c.len);
        if (c.child_count == 1) {
            if (v < c.child_lo || v >= c.child_hi) return c.node;
            cur = c.child_target;
            continue;
        }
        const CChild* begin = cchildren_.data() + c.child_begin;
        const CChild* end = begin + c.child_count;
        const CChild* it =
            std::upper_bound(begin, end, v, [](u32 value, const CChild& k) { return value < k.lo; });
        if (it == begin) return c.node;
        --it;
        if (v >= it->hi) return c.node;
        cur = it->target;
    }
}

void Vocabulary::longest_tokens(const u8* data, size_t size, u32* longest) const {
    // The automaton's state after a byte depends only on the last max_len_ bytes (its string
    // is at most that long), so a walk started from the root max_len_ bytes before its segment
    // is in the true state where the segment begins. WALKS such walks advance in lock-step:
    // each byte is a chain of dependent reads (state row, tile), and on a long input that does
    // not fit the caches the walks' misses overlap instead of queueing one behind the other.
    constexpr size_t WALKS = 8;
    size_t part = size / WALKS;
    u32 state[WALKS];
    size_t start[WALKS];
    for (size_t w = 0; w < WALKS; ++w) {
        start[w] = w * part;
        u32 s = 0;
        for (size_t i = start[w] > max_len_ ? start[w] - max_len_ : 0; i < start[w]; ++i)
            s = delta(s, data[i]);
        state[w] = s;
    }
    for (size_t j = 0; j < part; ++j)
        for (size_t w = 0; w < WALKS; ++w) {
            size_t i = start[w] + j;
            state[w] = delta(state[w], data[i]);
            longest[i + 1] = longest_[state[w]];
        }
    u32 s = state[WALKS - 1];  // the last walk also takes the remainder
    for (size_t i = WALKS * part; i < size; ++i) {
        s = delta(s, data[i]);
        longest[i + 1] = longest_[s];
    }
}

void Vocabulary::encode_piece(const u8* data, size_t size, std::vector<u32>& out,
                              std::vector<u32>& node, std::vector<u16>& /*unused*/,
                              std::vector<u32>& ring) const {
    // One pass over the bytes storing only each prefix's last token (as a node); the forest
    // ids the validity checks read lie at most one token length back, so they live in a small
    // ring buffer. The tokenization is the chain of last tokens from the end.
    if (size == 0) return;
    if (node.size() < size + 1) node.resize(size + 1);
    size_t window = 1;
    while (window < size_t(max_len_) + 2) window <<= 1;
    if (ring.size() < window) ring.resize(window);
    size_t mask = window - 1;
    ring[0] = NONE;
    size_t segment = 0;
    u32 state = 0;
    const u32* fids = ring.data();
    auto fid_at = [&](size_t q) { return q <= segment ? NONE : fids[q & mask]; };
    // Long pieces: the automaton runs first, as overlapped walks, leaving each position's
    // longest token in node[]; the BPE pass below then only reads it.
    bool walked = size >= WALKS_FROM;
    if (walked) longest_tokens(data, size, node.data());
    for (size_t i = 0; i < size; ++i) {
        size_t p = i + 1;
        u32 x;
        if (walked) {
            x = node[p];
        } else {
            state = delta(state, data[i]);
            x = longest_[state];
        }
        if (x == NONE) {
            node[p] = NONE;
            ring[p & mask] = NONE;
            segment = p;
            state = 0;
            continue;
        }
        u32 a = last_token(x, p, fid_at);
        node[p] = a;
        ring[p & mask] = info_[a].fid;
    }
    size_t first = out.size();
    for (size_t p = size; p > 0;) {
        u32 a = node[p];
        if (a == NONE) {
            out.push_back(UNKNOWN);
            p -= 1;
        } else {
            out.push_back(info_[a].id);
            p -= info_[a].len;
        }
    }
    std::reverse(out.begin() + first, out.end());
}

size_t Vocabulary::memory_bytes() const {
    size_t total = 0;
    for (const auto& t : tokens_) total += t.size() + sizeof(std::string);
    total += node_of_id_.size() * 4 + node_id_.size() * (4 + 2 + 2 + 4 * 3 + 4 * 3 + 8);
    total += states_.size() * sizeof(State) + tiles_.size() * sizeof(tiles_[0]);
    total += longest_.size() * 4 + depth_.size() * 2;
    total += info_.size() * sizeof(NodeInfo);
    total += cd_root_.size() * 4 + cnodes_.size() * sizeof(CNode) + cchildren_.size() * sizeof(CChild);
    return total;
}

// ---------------------------------------------------------------- incremental stream

Stream::Stream(const Vocabulary& vocab, bool eager) : vocab_(&vocab), eager_(eager) { reset(); }

void Stream::reset() {
    finished_ = false;
    state_ = 0;
    segment_start_ = 0;
    last_tok_.assign(1, NONE);
    last_len_.assign(1, 0);
    last_fid_.assign(1, NONE);
    alive_.assign(1, 0);
    child_sum_.assign(1, 0);
    frontier_lo_ = 0;
    root_ = 0;
    max_pending_ = 0;
    emitted_.clear();
}

void Stream::feed(const u8* data, size_t size) {
    if (finished_) throw std::logic_error("the stream was flushed; reset() it to start a new one");
    grow(last_tok_.size() + size);
    for (size_t i = 0; i < size; ++i) step(data[i]);
}

std::vector<u32> Stream::feed_timed(const u8* data, size_t size) {
    if (finished_) throw std::logic_error("the stream was flushed; reset() it to start a new one");
    std::vector<u32> ns(size);
    grow(last_tok_.size() + size);
    emitted_.reserve(emitted_.size() + size);
    using clock = std::chrono::steady_clock;
    for (size_t i = 0; i < size; ++i) {
        auto t0 = clock::now();
        step(data[i]);
        auto t1 = clock::now();
        ns[i] = u32(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    }
    return ns;
}

void Stream::grow(size_t want) {
    // geometric growth: many small feeds must not reallocate every time
    if (want <= last_tok_.capacity()) return;
    size_t cap = std::max(want, 2 * last_tok_.capacity());
    last_tok_.reserve(cap);
    last_len_.reserve(cap);
    last_fid_.reserve(cap);
    if (eager_) {
        alive_.reserve(cap);
        child_sum_.reserve(cap);
    }
}

void Stream::step(u8 byte) {
    const Vocabulary& v = *vocab_;
    size_t p = last_tok_.size();  // the new prefix length
    u32 s = v.delta(state_, byte);
    u32 x = v.longest_[s];
    size_t depth;
    if (x == NONE) {  // a byte no token contains: a hard boundary
        last_tok_.push_back(UNKNOWN);
        last_len_.push_back(1);
        last_fid_.push_back(NONE);
        segment_start_ = p;
        state_ = 0;
        depth = 0;
    } else {
        size_t segment = segment_start_;
        const u32* fid = last_fid_.data();
        auto fid_at = [segment, fid](size_t q) { return q <= segment ? NONE : fid[q]; };
        const Vocabulary::NodeInfo& a = v.info_[v.last_token(x, p, fid_at)];
        last_tok_.push_back(a.id);
        last_len_.push_back(a.len);
        last_fid_.push_back(a.fid);
        state_ = s;
        depth = v.depth_[s];
    }
    if (!eager_) return;
    alive_.push_back(0);
    child_sum_.push_back(0);
    size_t prev = p - last_len_[p];
    alive_[prev] += 1;
    child_sum_[prev] += p;
    advance_frontier(p - depth);
    max_pending_ = std::max(max_pending_, p - root_);
}

constexpr u32 DEAD = 0xFFFFFFFFu;

void Stream::kill(size_t q) {
    // q left the frontier with no live chain through it; so may its predecessors
    for (;;) {
        alive_[q] = DEAD;
        size_t prev = q - last_len_[q];
        alive_[prev] -= 1;
        child_sum_[prev] -= q;
        if (alive_[prev] != 0 || prev >= frontier_lo_ || prev <= root_) return;
        q = prev;
    }
}

void Stream::advance_frontier(size_t new_lo) {
    // Every future tokenization reaches back to a position in [size - depth, size]: a token
    // that ends later and covers seen bytes starts within the automaton's depth.
    size_t old_lo = frontier_lo_;
    if (new_lo <= old_lo) return;
    frontier_lo_ = new_lo;
    for (size_t q = std::max(old_lo, root_ + 1); q < new_lo; ++q)
        if (alive_[q] == 0) kill(q);
    // all live chains pass through root_; while they also pass through its only live child,
    // the token between them is certain
    while (root_ < frontier_lo_ && alive_[root_] == 1) {
        size_t child = size_t(child_sum_[root_]);
        emitted_.push_back(last_tok_[child]);
        root_ = child;
    }
}

std::vector<u32> Stream::take_emitted() {
    std::vector<u32> out;
    out.swap(emitted_);
    return out;
}

void Stream::finish() {
    if (finished_) return;
    if (eager_)
        advance_frontier(size());
    else
        emitted_ = tokens_of_prefix(size());
    finished_ = true;
}

std::vector<u32> Stream::tokens_of_prefix(size_t prefix) const {
    if (prefix > size()) throw std::out_of_range("prefix longer than the stream");
    std::vector<u32> out;
    for (size_t p = prefix; p > 0; p -= last_len_[p]) out.push_back(last_tok_[p]);
    std::reverse(out.begin(), out.end());
    return out;
}

// ---------------------------------------------------------------- eager encoder on a ring

EagerEncoder::EagerEncoder(const Vocabulary& vocab) : vocab_(&vocab) {
    size_t window = 64;
    while (window < 2 * (size_t(vocab.max_len_) + 2)) window <<= 1;
    ring_.resize(window);
    mask_ = window - 1;
    reset();
}

void EagerEncoder::reset() {
    n_ = 0;
    state_ = 0;
    segment_start_ = 0;
    frontier_lo_ = 0;
    root_ = 0;
    ring_[0] = {NONE, NONE, 0, 0, 0};
    emitted_.clear();
}

void EagerEncoder::grow() {
    // positions from min(root_, n_ - t) to n_ are still read; they move to a ring twice as big
    size_t t = vocab_->max_len_;
    size_t lo = std::min(root_, n_ > t ? n_ - t : 0);
    std::vector<Slot> bigger(ring_.size() * 2);
    size_t mask = bigger.size() - 1;
    for (size_t q = lo; q <= n_; ++q) bigger[q & mask] = ring_[q & mask_];
    ring_.swap(bigger);
    mask_ = mask;
}

void EagerEncoder::feed(const u8* data, size_t size) {
    constexpr size_t BLOCK = 1024;
    longest_buf_.resize(BLOCK);
    state_buf_.resize(BLOCK);
    const size_t t = vocab_->max_len_;
    while (size) {
        size_t m = std::min(size, BLOCK);
        if (m < WALKED_FROM || serial_blocks_ > 0) {
            if (serial_blocks_ > 0) --serial_blocks_;
            automaton(data, m);
        } else {
            walk(data, m);
        }
        // the ring holds every position the block's steps and the emitter read: from
        // min(root, n - t) to n + m
        while (n_ + m - std::min(root_, n_ > t ? n_ - t : 0) >= ring_.size()) grow();
        last_tokens(m);
        settle(m);
        data += m;
        size -= m;
    }
}

void EagerEncoder::automaton(const u8* data, size_t m) {
    const Vocabulary& v = *vocab_;
    u32* xs = longest_buf_.data();
    u32 s = state_;
    for (size_t i = 0; i < m; ++i) {
        // a byte no token contains leads to the root (see walk): no test on the state's path
        s = v.delta(s, data[i]);
        xs[i] = v.longest_[s];
    }
    state_ = s;
}

void EagerEncoder::walk(const u8* data, size_t m) {
    // The state after a byte depends only on the last t bytes, so a walk started from the root
    // at a segment's start soon agrees with the true one; the true walk then runs on from the
    // previous segment's end only until they agree (as a deterministic automaton they stay
    // equal). A byte no token holds leads every state to the root (no trie edge carries it, so
    // every row's entry for it is the root's, 0): the walks need no test for it, and each byte
    // costs two dependent reads (row, tile). The longest tokens are read afterwards, from the
    // states, as independent loads.
    constexpr size_t WALKS = 8;
    const Vocabulary& v = *vocab_;
    u32* xs = longest_buf_.data();
    u32* ss = state_buf_.data();
    size_t part = m / WALKS;
    u32 st[WALKS] = {state_};
    for (size_t j = 0; j < part; ++j)
        for (size_t w = 0; w < WALKS; ++w) {
            size_t i = w * part + j;
            st[w] = v.delta(st[w], data[i]);
            ss[i] = st[w];
        }
    for (size_t i = WALKS * part; i < m; ++i) {  // the remainder: the last walk's
        st[WALKS - 1] = v.delta(st[WALKS - 1], data[i]);
        ss[i] = st[WALKS - 1];
    }
    // The corrections run in lock-step too, each from the end of the previous segment as the
    // first pass left it; one that ran from a state a correction then changed is redone from the
    // corrected state, serially (rare: a segment whose walk never agreed with the true one).
    size_t redone = 0;
    if (part > 0) {
        u32 end0[WALKS], cs[WALKS];
        size_t at[WALKS], stop[WALKS];
        size_t active = 0;
        for (size_t w = 1; w < WALKS; ++w) {
            end0[w] = ss[w * part - 1];
            cs[w] = end0[w];
            at[w] = w * part;
            stop[w] = w + 1 < WALKS ? (w + 1) * part : m;
            ++active;
        }
        while (active) {
            for (size_t w = 1; w < WALKS; ++w) {
                if (at[w] == stop[w]) continue;
                size_t i = at[w];
                u32 s = v.delta(cs[w], data[i]);
                ++redone;
                if (s == ss[i]) {
                    at[w] = stop[w];
                    --active;
                    continue;
                }
                ss[i] = s;
                cs[w] = s;
                if (++at[w] == stop[w]) --active;
            }
        }
        for (size_t w = 2; w < WALKS; ++w) {
            if (ss[w * part - 1] == end0[w]) continue;  // its correction started where it ends
            u32 s = ss[w * part - 1];
            size_t end = w + 1 < WALKS ? (w + 1) * part : m;
            for (size_t i = w * part; i < end; ++i, ++redone) {
                s = v.delta(s, data[i]);
                if (s == ss[i]) break;
                ss[i] = s;
            }
        }
    }
    const u32* longest = v.longest_.data();
    for (size_t i = 0; i < m; ++i) xs[i] = longest[ss[i]];
    state_ = ss[m - 1];
    // walks that take long to agree (long runs of one token's bytes: a cache-hot automaton,
    // nothing to overlap) cost more than they save: walk serially for a while, then try again
    if (redone * 4 > m) serial_blocks_ = 16;
}

void EagerEncoder::last_tokens(size_t m) {
    // each new prefix's last token, as Vocabulary::encode_piece; the validity checks read the
    // forest ids at most t positions back, which the ring holds
    constexpr size_t AHEAD = 8;
    const Vocabulary& v = *vocab_;
    const u32* xs = longest_buf_.data();
    Slot* ring = ring_.data();
    const size_t mask = mask_;
    size_t segment = segment_start_;
    for (size_t i = 0; i < m; ++i) {
        if (i + AHEAD < m && xs[i + AHEAD] != NONE) __builtin_prefetch(&v.info_[xs[i + AHEAD]]);
        size_t p = n_ + 1 + i;
        u32 x = xs[i];
        if (x == NONE) {  // a byte no token contains: a hard boundary
            ring[p & mask] = {UNKNOWN, NONE, 0, 0, 1};
            segment = p;
            continue;
        }
        auto fid_at = [segment, ring, mask](size_t q) {
            return q <= segment ? NONE : ring[q & mask].fid;
        };
        const Vocabulary::NodeInfo& a = v.info_[v.last_token(x, p, fid_at)];
        ring[p & mask] = {a.id, a.fid, 0, 0, a.len};
    }
    segment_start_ = segment;
}

void EagerEncoder::settle(size_t m) {
    // Each new position becomes a live child of its last token's start; then the frontier
    // moves once for the block, to n - depth (the automaton's depth after the block's last
    // byte). Done per block instead of per byte, the result is the same: a position below the frontier gets no new child (a last token is no longer than
    // the automaton's depth), so its live-child count is final when the frontier passes it, and
    // the root's single-child chain only lengthens.
    Slot* ring = ring_.data();
    const size_t mask = mask_;
    for (size_t p = n_ + 1; p <= n_ + m; ++p) {
        u16 len = ring[p & mask].len;
        Slot& prev = ring[(p - len) & mask];
        prev.alive += 1;
        prev.child_sum += len;
    }
    n_ += m;
    advance_frontier(n_ - vocab_->depth_[state_]);
}

void EagerEncoder::advance_frontier(size_t new_lo) {
    // as Stream::advance_frontier: every future tokenization reaches back into [n - depth, n];
    // positions that leave the frontier with no live chain through them die, and so may their
    // predecessors; then while all live chains pass through the root's only live child, the
    // token between them is certain
    size_t old_lo = frontier_lo_;
    if (new_lo <= old_lo) return;
    frontier_lo_ = new_lo;
    Slot* ring = ring_.data();
    const size_t mask = mask_;
    size_t root = root_;
    for (size_t q = std::max(old_lo, root + 1); q < new_lo; ++q) {
        if (ring[q & mask].alive != 0) continue;
        for (size_t dead = q;;) {
            Slot& d = ring[dead & mask];
            d.alive = DEAD;
            size_t prev = dead - d.len;
            Slot& parent = ring[prev & mask];
            parent.alive -= 1;
            parent.child_sum -= u32(dead - prev);
            if (parent.alive != 0 || prev >= new_lo || prev <= root) break;
            dead = prev;
        }
    }
    // each certain token moves the root forward by at least one byte, and the root stays
    // below the frontier
    size_t base = emitted_.size();
    emitted_.resize(base + (new_lo - root));
    u32* out = emitted_.data() + base;
    while (root < new_lo && ring[root & mask].alive == 1) {
        size_t child = root + ring[root & mask].child_sum;
        *out++ = ring[child & mask].tok;
        root = child;
    }
    emitted_.resize(size_t(out - emitted_.data()));
    root_ = root;
}

void EagerEncoder::finish() { advance_frontier(n_); }

void EagerEncoder::take(std::vector<u32>& out) {
    out.insert(out.end(), emitted_.begin(), emitted_.end());
    emitted_.clear();
}

}  // namespace incbpe
