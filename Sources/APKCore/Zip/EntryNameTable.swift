#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The entry names seen so far, byte for byte, to find one given twice (what the central-directory reader and the
/// ZIP writers refuse) and to find where a name is (`index(of:)`: `ZipArchive.entry(named:)`, an overlay's output).
///
/// An open-addressing table over the names: each name is hashed once over its bytes (`Hasher.combine(bytes:)`)
/// and compared with `memcmp` only when the hashes agree. `Set<[UInt8]>` would feed the hasher one byte at a time,
/// several times slower, and hash every name again each time it grows. `Hasher`'s per-process seed keeps a
/// crafted archive from making every name collide. A slot holds a name's position and the high half of its hash
/// together, so a probe reads one place in memory until the hashes agree. The names are kept by reference
/// (arrays are not copied).
package struct EntryNameTable: Sendable {
    private var names: [[UInt8]] = []
    /// Each name's full hash, read only to place the names again when the table grows.
    private var hashes: [Int] = []
    /// 0 for an empty slot, else the high 32 bits of the name's hash over its position in `names` plus one; the
    /// capacity is a power of two, at least twice the names.
    private var slots: [UInt64]

    /// A table that holds `minimumCapacity` names without growing.
    package init(minimumCapacity: Int = 0) {
        slots = [UInt64](repeating: 0, count: Self.capacity(for: minimumCapacity))
        names.reserveCapacity(minimumCapacity)
        hashes.reserveCapacity(minimumCapacity)
    }

    /// How many names the table holds.
    package var count: Int { names.count }

    /// Adds `name`; false (and nothing added) when the table already holds the same bytes.
    package mutating func insert(_ name: [UInt8]) -> Bool {
        let hash = name.withUnsafeBytes { bytes in
            var hasher = Hasher()
            hasher.combine(bytes: bytes)
            return hasher.finalize()
        }
        let mask = slots.count - 1
        let tag = Self.tag(of: hash)
        var slot = hash & mask
        while slots[slot] != 0 {
            if slots[slot] & 0xFFFF_FFFF_0000_0000 == tag, Self.equal(names[Int(slots[slot] & 0xFFFF_FFFF) - 1], name) { return false }
            slot = (slot + 1) & mask
        }
        guard 2 * (names.count + 1) <= slots.count else {
            grow()
            return insert(name)
        }
        names.append(name)
        hashes.append(hash)
        slots[slot] = tag | UInt64(names.count)
        return true
    }

    /// The position (in the order of `insert`) of the name with exactly these bytes, if the table holds it.
    package func index(of name: UnsafeRawBufferPointer) -> Int? {
        var hasher = Hasher()
        hasher.combine(bytes: name)
        let hash = hasher.finalize()
        let mask = slots.count - 1
        let tag = Self.tag(of: hash)
        var slot = hash & mask
        while slots[slot] != 0 {
            if slots[slot] & 0xFFFF_FFFF_0000_0000 == tag {
                let index = Int(slots[slot] & 0xFFFF_FFFF) - 1
                if names[index].withUnsafeBytes({ Self.equal($0, name) }) { return index }
            }
            slot = (slot + 1) & mask
        }
        return nil
    }

    /// The high 32 bits of `hash`, in place: the low bits choose the slot, these tell names in it apart.
    private static func tag(of hash: Int) -> UInt64 { UInt64(UInt(bitPattern: hash)) & 0xFFFF_FFFF_0000_0000 }

    private static func capacity(for count: Int) -> Int {
        var capacity = 16
        while capacity < 2 * count { capacity <<= 1 }
        return capacity
    }

    /// Doubles the slots, placing every name again from its kept hash.
    private mutating func grow() {
        slots = [UInt64](repeating: 0, count: slots.count * 2)
        let mask = slots.count - 1
        for (index, hash) in hashes.enumerated() {
            var slot = hash & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = Self.tag(of: hash) | UInt64(index + 1)
        }
    }

    private static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in equal(x, y) } }
    }

    private static func equal(_ x: UnsafeRawBufferPointer, _ y: UnsafeRawBufferPointer) -> Bool {
        guard x.count == y.count else { return false }
        guard let p = x.baseAddress, let q = y.baseAddress else { return true }  // both empty
        return memcmp(p, q, x.count) == 0
    }
}
