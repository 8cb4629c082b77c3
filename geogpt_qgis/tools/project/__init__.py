"""The project tool family: read, describe, select in, arrange and change the layers of the open project.

- ``family``: ``ProjectTools`` (describe_layer, select_features, sample_raster, zonal_summary, set_layer...)
  and the project's brief for the prompt (``project_brief``).
- ``edits``: ``EditTools``, the gated changes to the user's data (delete or change features).
- ``layer_tree``: layer order and groups, planned before anything moves.
- ``raster_sample``, ``raster_zonal``: values of a raster at points, zonal summaries within polygons.
- ``run_undo``, ``run_snapshot``, ``edit_journal``: Undo run (the project before a question, put back on demand;
  the edits it saved, reverted).

What other families use as well (finding layers, rasters, measures, data checks, the result
store) stays in ``tools/`` beside the families.
"""
