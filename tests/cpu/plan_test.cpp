// The engine's launch planning and argument checks (no device needed for null pointers).
#include <gtest/gtest.h>

#include "fastreduce/detail/plan.hpp"

namespace eng = fastreduce::engine;

TEST(EnginePlan, AlignedFloatsSplitIntoVectors) {
  const auto plan = eng::plan_fast(1000, 4, 0x1000, 4, eng::kSmall, 132, 8, 0);
  EXPECT_EQ(plan.head, 0u);
  EXPECT_EQ(plan.vectors, 250u);
  EXPECT_EQ(plan.grid, 1u);
  EXPECT_GE(plan.share * plan.grid, plan.vectors);
  EXPECT_EQ(plan.share % eng::kSmall.threads, 0u);
}

TEST(EnginePlan, MisalignedPointerPeelsAHead) {
  // A float pointer 4 bytes past a 16-byte boundary: 3 elements before the next boundary.
  const auto plan = eng::plan_fast(1003, 4, 0x1004, 4, eng::kSmall, 132, 8, 0);
  EXPECT_EQ(plan.head, 3u);
  EXPECT_EQ(plan.vectors, 250u);
  EXPECT_EQ(plan.head + plan.vectors * 4, 1003u);
  // Fewer elements than the head: all of them are head.
  const auto tiny = eng::plan_fast(2, 4, 0x1004, 4, eng::kSmall, 132, 8, 0);
  EXPECT_EQ(tiny.head, 2u);
  EXPECT_EQ(tiny.vectors, 0u);
  // double 8 bytes past: 1 element of head.
  EXPECT_EQ(eng::plan_fast(9, 8, 0x1008, 8, eng::kSmall, 132, 8, 0).head, 1u);
}

TEST(EnginePlan, GridGrowsWithNAndStopsAtResidentCapacity) {
  const auto mid = eng::plan_fast(std::size_t(1) << 20, 4, 0, 4, eng::kSmall, 132, 8, 0);
  EXPECT_EQ(mid.grid, (std::size_t(1) << 18) / eng::kSmall.vectors_per_block);
  const auto big = eng::plan_fast(std::size_t(1) << 30, 4, 0, 4, eng::kSmall, 132, 8, 0);
  EXPECT_EQ(big.grid, 132u * 8u);
  EXPECT_GE(std::size_t(big.share) * big.grid, big.vectors);
  EXPECT_EQ(big.temp_bytes, 132u * 8u * 4u);
}

// The one-block policy: one block whatever n is, its threads striding over every vector.
TEST(EnginePlan, OneBlockPolicyIsOneBlock) {
  for (std::size_t n : {std::size_t(0), std::size_t(5), eng::kSm90.one_block_max_bytes / 4, std::size_t(1) << 24}) {
    for (std::uintptr_t address : {std::uintptr_t(0x1000), std::uintptr_t(0x1004)}) {
      const auto plan = eng::plan_fast(n, 4, address, 4, eng::kOneBlock, 132, 2, 0);
      EXPECT_EQ(plan.grid, 1u);
      EXPECT_GE(plan.share, plan.vectors);
      EXPECT_EQ(plan.share % eng::kOneBlock.threads, 0u);
    }
  }
}

TEST(EnginePlan, PathsFollowTheArchitecturesLimits) {
  const eng::ArchPolicy& hopper = eng::policy_for(9);
  EXPECT_EQ(&hopper, &eng::kSm90);
  EXPECT_EQ(&eng::policy_for(8), &eng::kGeneric);
  EXPECT_EQ(&eng::policy_for(10), &eng::kSm90);
  for (const eng::ArchPolicy* arch : {&eng::kSm90, &eng::kGeneric}) {
    EXPECT_EQ(eng::select_fast_path(0, 4, *arch, true), eng::Path::OneBlock);
    EXPECT_EQ(eng::select_fast_path(arch->one_block_max_bytes, 4, *arch, true), eng::Path::OneBlock);
    EXPECT_EQ(eng::select_fast_path(arch->one_block_max_bytes + 1, 4, *arch, true), eng::Path::Small);
    EXPECT_EQ(eng::select_fast_path(arch->small_max_bytes, 4, *arch, true), eng::Path::Small);
    EXPECT_EQ(eng::select_fast_path(arch->small_max_bytes + 1, 4, *arch, true), eng::Path::Large);
  }
  const std::size_t bulk = eng::kSm90.bulk_min_bytes;
  EXPECT_EQ(eng::select_fast_path(bulk - 1, 4, eng::kSm90, true), eng::Path::Large);
  EXPECT_EQ(eng::select_fast_path(bulk, 4, eng::kSm90, true), eng::Path::Bulk);
  EXPECT_EQ(eng::select_fast_path(bulk, 8, eng::kSm90, true), eng::Path::Bulk);
  // Not where the bulk kernel cannot run (code compiled for an older GPU), nor for 1- and 2-byte
  // types, nor on architectures without bulk copies.
  EXPECT_EQ(eng::select_fast_path(bulk, 4, eng::kSm90, false), eng::Path::Large);
  EXPECT_EQ(eng::select_fast_path(bulk, 2, eng::kSm90, true), eng::Path::Large);
  EXPECT_EQ(eng::select_fast_path(bulk, 1, eng::kSm90, true), eng::Path::Large);
  EXPECT_EQ(eng::select_fast_path(std::size_t(1) << 40, 4, eng::kGeneric, true), eng::Path::Large);
  for (auto path : {eng::Path::OneBlock, eng::Path::Small, eng::Path::Large, eng::Path::Bulk, eng::Path::Reproducible}) {
    EXPECT_STRNE(eng::path_name(path), "?");
  }
}

// The depth bounds a sum's error: it counts a thread's chain of vectors, the additions inside a
// vector, the head and tail, the block reduction and the combine of the partials.
TEST(EnginePlan, SummationDepthFollowsThePlan) {
  const auto one = eng::plan_fast(1000, 4, 0, 4, eng::kOneBlock, 132, 2, 0);
  EXPECT_EQ(eng::fast_depth(one, eng::kOneBlock.threads, 2), 1u + 2u + 2u + 10u);
  const auto many = eng::plan_fast(std::size_t(1) << 24, 4, 0, 4, eng::kLarge, 132, 2, 0);
  ASSERT_EQ(many.grid, 264u);
  const std::size_t per_thread = (many.share + 1023) / 1024;
  EXPECT_EQ(eng::fast_depth(many, 1024, 2), per_thread + 2 + 2 + 10 + (1 + 10));  // 264 partials: 1 per combine thread
  const auto small = eng::plan_fast(std::size_t(1) << 20, 4, 0, 4, eng::kSmall, 132, 4, 0);
  ASSERT_GT(small.grid, 64u);  // more partials than a 64-thread combine takes one each
  EXPECT_EQ(eng::fast_depth(small, 64, 2), (small.share + 63) / 64 + 2 + 2 + 10 + ((small.grid + 63) / 64 + 10));
  const std::size_t n = (std::size_t(1) << 28) + 5;
  const auto bulk = eng::plan_bulk(n, 4, 0, 4, eng::kBulk.stage_bytes, 132, 1, 0);
  EXPECT_EQ(eng::bulk_depth(bulk, n, eng::kBulk, 2), bulk.stages_per_block * 4 + 2 + 1 + 1 + 10 + (1 + 10));
}

// The heavy reductions (arg-extremes, moments) work per element: on the large load path (over 4 MB:
// 2^24 elements of every width here) a 2- or 1-byte input gets as many blocks as a float input of
// as many elements; wider types keep the share in bytes. (blocks_per_sm 100: no cap below 1024.)
TEST(EnginePlan, HeavySharesFollowTheElements) {
  for (const eng::FastPolicy& p : {eng::kHeavySmall, eng::kHeavyLarge}) {
    EXPECT_EQ(eng::per_element_share(p, 4).vectors_per_block, p.vectors_per_block);
    EXPECT_EQ(eng::per_element_share(p, 8).vectors_per_block, p.vectors_per_block);
    EXPECT_EQ(eng::per_element_share(p, 2).vectors_per_block, p.vectors_per_block / 2);
    EXPECT_EQ(eng::per_element_share(p, 1).vectors_per_block, p.vectors_per_block / 4);
    EXPECT_EQ(eng::per_element_share(p, 2).threads, p.threads);
    EXPECT_EQ(eng::per_element_share(p, 2).unroll, p.unroll);
  }
  EXPECT_EQ(eng::per_element_share(eng::FastPolicy{.threads = 32, .unroll = 1, .vectors_per_block = 2}, 1).vectors_per_block,
            1u);  // never 0 (which plans one block whatever n is)
  const std::size_t n = std::size_t(1) << 24;
  const auto floats = eng::plan_fast(n, 4, 0, 32, eng::kHeavyLarge, 132, 100, 0);
  const auto halves = eng::plan_fast(n, 2, 0, 32, eng::per_element_share(eng::kHeavyLarge, 2), 132, 100, 0);
  const auto bytes = eng::plan_fast(n, 1, 0, 32, eng::per_element_share(eng::kHeavyLarge, 1), 132, 100, 0);
  EXPECT_EQ(floats.grid, 1024u);
  EXPECT_EQ(halves.grid, floats.grid);
  EXPECT_EQ(bytes.grid, floats.grid);
}

TEST(EnginePlan, MaxBlocksCapsTheGrid) {
  for (unsigned cap : {1u, 3u, 7u, 64u}) {
    const auto plan = eng::plan_fast(std::size_t(1) << 26, 4, 0, 4, eng::kSmall, 132, 8, cap);
    EXPECT_EQ(plan.grid, cap);
    EXPECT_GE(std::size_t(plan.share) * plan.grid, plan.vectors);
  }
}

TEST(EnginePlan, TempSizeDoesNotDependOnTheAddressAndIsNeverZero) {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000003), std::size_t(1) << 31}) {
    const auto a = eng::plan_fast(n, 4, 0, 4, eng::kSmall, 132, 8, 0);
    const auto b = eng::plan_fast(n, 4, 0x1004, 4, eng::kSmall, 132, 8, 0);
    EXPECT_EQ(a.temp_bytes, b.temp_bytes);
    EXPECT_GT(a.temp_bytes, 0u);
  }
}

TEST(EnginePlan, BulkStagesCoverTheBodyAndTheTailFollows) {
  const std::size_t n = (std::size_t(1) << 27) + 5;
  const auto plan = eng::plan_bulk(n, 4, 0x1008, 4, 32768, 132, 1, 0);
  EXPECT_EQ(plan.head, 2u);
  EXPECT_EQ(plan.stages, (n - 2) / 8192);
  EXPECT_EQ(plan.tail_begin, 2 + plan.stages * 8192);
  EXPECT_LT(n - plan.tail_begin, 8192u);
  EXPECT_EQ(plan.grid, 132u);
  EXPECT_GE(plan.stages_per_block * plan.grid, plan.stages);
  EXPECT_EQ(eng::plan_bulk(n, 4, 0, 4, 32768, 132, 1, 5).grid, 5u);
}

TEST(EnginePlan, ReproducibleTilesDependOnNAlone) {
  const auto a = eng::plan_reproducible(std::size_t(1) << 24, 132, 8, 0, 33);
  const auto b = eng::plan_reproducible(std::size_t(1) << 24, 114, 4, 7, 33);
  EXPECT_EQ(a.tiles, (std::size_t(1) << 24) / eng::kReproTile);
  EXPECT_EQ(a.tiles, b.tiles);
  EXPECT_EQ(a.grid, 132u * 8u);
  EXPECT_EQ(b.grid, 7u);
  // One accumulator (limbs and a flags word, 8 bytes each) per block.
  EXPECT_EQ(a.temp_bytes, a.grid * 33u * 8u);
  EXPECT_EQ(b.temp_bytes, 7u * 33u * 8u);
  EXPECT_EQ(eng::plan_reproducible(0, 132, 8, 0, 97).tiles, 0u);
  EXPECT_EQ(eng::plan_reproducible(0, 132, 8, 0, 97).grid, 1u);
  EXPECT_EQ(eng::plan_reproducible(0, 132, 8, 0, 97).temp_bytes, 97u * 8u);
  EXPECT_EQ(eng::plan_reproducible(4097, 132, 8, 0, 33).tiles, 2u);
  // While one block's 8 warps can take a tile each, that block alone (one launch); above, a
  // block per tile up to what is resident.
  EXPECT_EQ(eng::plan_reproducible(4097, 132, 8, 0, 33).grid, 1u);
  EXPECT_EQ(eng::plan_reproducible(8 * 4096, 132, 8, 0, 33).grid, 1u);
  EXPECT_EQ(eng::plan_reproducible(8 * 4096 + 1, 132, 8, 0, 33).grid, 9u);
}

TEST(EngineArguments, NullPointersAndSmallTempAreRejectedInOrder) {
  alignas(16) int dummy[8];
  EXPECT_EQ(eng::validate_arguments(dummy, nullptr, dummy, 4, 4, 4, 64, 64).code, cudaErrorInvalidValue);
  EXPECT_EQ(eng::validate_arguments(nullptr, dummy, dummy, 4, 4, 4, 64, 64).code, cudaErrorInvalidValue);
  EXPECT_EQ(eng::validate_arguments(dummy, dummy, dummy, 4, 4, 4, 32, 64).code, cudaErrorInvalidValue);
  const auto misaligned = eng::validate_arguments(reinterpret_cast<char*>(dummy) + 1, dummy, dummy, 4, 4, 4, 64, 64);
  EXPECT_EQ(misaligned.code, cudaErrorMisalignedAddress);
  EXPECT_NE(std::string(misaligned.message).find("d_in"), std::string::npos);
  const auto temp = eng::validate_arguments(dummy, dummy, reinterpret_cast<char*>(dummy) + 8, 4, 4, 4, 64, 64);
  EXPECT_EQ(temp.code, cudaErrorMisalignedAddress);
  EXPECT_NE(std::string(temp.message).find("d_temp"), std::string::npos);
}

// Single elements (a type that does not fill a 16-byte vector, or two inputs lying differently
// from a 16-byte boundary): no head, every element a vector of one; the grid still follows the
// bytes read, so it is the same at any alignment.
TEST(EnginePlan, SingleElementsAndTwoInputs) {
  const auto one = eng::plan_fast(1003, 4, 0x1004, 8, eng::kSmall, 132, 8, 0, 1);
  EXPECT_EQ(one.head, 0u);
  EXPECT_EQ(one.vectors, 1003u);
  const std::size_t n = std::size_t(1) << 20;  // below the resident capacity
  const auto vec = eng::plan_fast(n, 4, 0x1000, 8, eng::kLarge, 132, 8, 0, 4, 8);
  const auto scalar = eng::plan_fast(n, 4, 0x1004, 8, eng::kLarge, 132, 8, 0, 1, 8);
  EXPECT_EQ(vec.grid, scalar.grid);
  // Two inputs read twice the bytes: twice the blocks of one input of the same n.
  EXPECT_EQ(vec.grid, 2 * eng::plan_fast(n, 4, 0x1000, 8, eng::kLarge, 132, 8, 0).grid);
  // A 24-byte element: one a vector.
  const auto wide = eng::plan_fast(1000, 24, 0x1008, 24, eng::kSmall, 132, 8, 0);
  EXPECT_EQ(wide.head, 0u);
  EXPECT_EQ(wide.vectors, 1000u);
}

// The ordered path: at least two tiles a block where there are enough, never more blocks than
// are resident, storage for every resident block whatever the alignment.
TEST(EnginePlan, OrderedTiles) {
  const std::size_t tile = std::size_t(eng::kOrderedThreads) * eng::kOrderedRound * 4;
  const auto few = eng::plan_ordered(3 * tile, 4, 8, 132, 2, 0);  // 3 tiles: 2 + 1
  EXPECT_EQ(few.grid, 2u);
  EXPECT_EQ(few.per_block, 2u);
  EXPECT_EQ(eng::plan_ordered(2 * tile, 4, 8, 132, 2, 0).grid, 1u);
  const auto many = eng::plan_ordered(10000 * tile + 1, 4, 8, 132, 2, 0);
  EXPECT_EQ(many.grid, 264u);
  EXPECT_GE(std::size_t(many.grid) * many.per_block, 10001u);
  EXPECT_EQ(many.temp_bytes, 264u * 8u);
  EXPECT_EQ(eng::plan_ordered(0, 1, 8, 132, 2, 0).grid, 1u);
  EXPECT_EQ(eng::plan_ordered(10000 * tile, 4, 8, 132, 2, 5).grid, 5u);
}
