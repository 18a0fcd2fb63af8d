"""Fabric sizing against the NVIDIA DGX SuperPOD reference architecture (RA-11333, H100; B200 RA Table 3).

Prints leaf / spine / core switch counts and the compute fabric's transceivers for the RA's published
configurations beside trainsizer's (plan/buildout/fabric.py + links.py), and the difference.
Run: python benchmarks/fabric_validation.py
"""

from __future__ import annotations

from trainsizer.catalog import load_catalog
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.fabric import size_fat_tree
from trainsizer.plan.buildout.links import link_parts

# (nodes, leaf, spine, core) - RA-11333 Table 3 / DGX B200 RA (8 NDR400 rails per node, QM9700 radix 64)
TABLE3 = [(128, 32, 16, 0), (256, 64, 32, 0), (512, 128, 128, 64), (1024, 256, 256, 128), (2048, 512, 512, 256)]
# RA-11333 Table 4: 31 / 63 / 95 / 127 DGX (one SU port per 32 goes to UFM); 95 nodes: the RA provisions 16
# spines for growth to 4 SU (fabric_bom.yaml note), trainsizer sizes for the nodes planned.
TABLE4 = [(31, 8, 4), (63, 16, 8), (95, 24, 16), (127, 32, 16)]
# RA-11333 Table 8, 127 nodes: switch-side OSFP (2xSR4) transceivers 1,536 (incl. 4 UFM); fibres: 2,040 NDR400
TABLE8 = {"nodes": 127, "switch_xcvr": 1536, "cables": 2040}


def main() -> None:
    cat = load_catalog()
    print("RA-11333 Table 3 (nodes: leaf/spine/core)   RA            trainsizer")
    for nodes, leaf, spine, core in TABLE3:
        t = size_fat_tree(nodes, 8, 64)
        print(f"  {nodes:5d} nodes                          {leaf:3d}/{spine:3d}/{core:3d}   "
              f"{t.leaves:3d}/{t.spines:3d}/{t.cores:3d}   {'ok' if (t.leaves, t.spines, t.cores) == (leaf, spine, core) else 'DIFF'}")
    print("RA-11333 Table 4 (nodes: leaf/spine)")
    for nodes, leaf, spine in TABLE4:
        t = size_fat_tree(nodes, 8, 64)
        print(f"  {nodes:5d} nodes                          {leaf:3d}/{spine:3d}       {t.leaves:3d}/{t.spines:3d}       "
              f"{'ok' if (t.leaves, t.spines) == (leaf, spine) else 'DIFF (RA provisions spines for the next SU)'}")
    t = size_fat_tree(TABLE8["nodes"], 8, 64)
    dist = rules.value("fabric", "distance_node_leaf_m")
    parts = link_parts(cat, t.node_leaf_links, 400, dist, "node-leaf", False)
    parts += link_parts(cat, t.leaf_spine_links, 400, rules.value("fabric", "distance_leaf_spine_m"), "leaf-spine", True)
    switch_x = sum(p.quantity for p in parts if "switch transceiver" in p.role)
    fibres = sum(p.quantity for p in parts if "fibre" in p.role)
    print("RA-11333 Table 8, 127 nodes (compute fabric)   RA     trainsizer")
    print(f"  switch-side twin-port transceivers          {TABLE8['switch_xcvr']:5d}  {switch_x:5d}  "
          f"({TABLE8['switch_xcvr'] - switch_x} = UFM and spare ports)")
    print(f"  NDR400 cables / fibres                      {TABLE8['cables']:5d}  {fibres:5d}")


if __name__ == "__main__":
    main()
