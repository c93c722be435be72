"""docket/spatial_relations: relative positions on a board seen under random affine views."""
