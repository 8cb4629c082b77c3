"""The shared vocabulary of effects: which need approval, and how a call's effects read."""

from __future__ import annotations

from geogpt_qgis.core.effects import FREE_EFFECTS, CallEffects, Effect, Found


def test_only_reading_selecting_and_new_layers_are_free():
    assert {Effect.READ, Effect.SELECT, Effect.ADD_LAYER} == FREE_EFFECTS
    assert all(effect.needs_approval for effect in Effect if effect not in FREE_EFFECTS)


def test_a_call_summarises_its_risky_effects_with_their_targets():
    effects = CallEffects.of(
        [
            Found(Effect.READ, "layer 'schools'"),
            Found(Effect.NETWORK, "URL=http://127.0.0.1/leak"),
            Found(Effect.WRITE_FILE, "file /home/ann/out.gpkg", "exists: it will be overwritten"),
            Found(Effect.NETWORK, "URL=http://127.0.0.1/leak"),
        ]
    )
    assert effects.needs_approval
    assert effects.kinds == [Effect.READ, Effect.NETWORK, Effect.WRITE_FILE]
    assert effects.summary() == "talks to the network and writes files"
    assert effects.lines() == [
        "talks to the network: URL=http://127.0.0.1/leak",
        "writes files: file /home/ann/out.gpkg (exists: it will be overwritten)",
    ]


def test_a_harmless_call_needs_nothing():
    effects = CallEffects.of([Found(Effect.READ, "layer 'rivers'"), Found(Effect.ADD_LAYER, "OUTPUT")])
    assert not effects.needs_approval
    assert effects.summary() == "reads data and adds result layers"
    assert (effects + CallEffects.of([Found(Effect.RUN_CODE, "x()")])).needs_approval
