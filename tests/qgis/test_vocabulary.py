"""The guided reply's vocabulary: the project's layers and fields, and the registry's algorithms as they are now.

The algorithm ids are sorted once per state of the registry; a provider that a
plugin adds (or removes) later must show in the next read, never a stale list.
"""

from __future__ import annotations

from qgis.core import (
    QgsApplication,
    QgsProcessingAlgorithm,
    QgsProcessingParameterNumber,
    QgsProcessingProvider,
    QgsVectorLayer,
)

from geogpt_qgis.tools.vocabulary import read_vocabulary
from tests.support.schemas import admits


class _Echo(QgsProcessingAlgorithm):
    def name(self) -> str:
        return "echo"

    def displayName(self) -> str:  # noqa: N802 - QGIS override
        return "Echo"

    def createInstance(self) -> QgsProcessingAlgorithm:  # noqa: N802 - QGIS override
        return _Echo()

    def initAlgorithm(self, config=None) -> None:  # noqa: N802 - QGIS override
        self.addParameter(QgsProcessingParameterNumber("VALUE", "Value"))

    def processAlgorithm(self, parameters, context, feedback) -> dict:  # noqa: N802 - QGIS override
        return {"VALUE": self.parameterAsDouble(parameters, "VALUE", context)}


class _LateProvider(QgsProcessingProvider):
    def id(self) -> str:
        return "geogptlate"

    def name(self) -> str:
        return "Added late"

    def loadAlgorithms(self) -> None:  # noqa: N802 - QGIS override
        self.addAlgorithm(_Echo())


def test_the_vocabulary_names_the_projects_layers_and_fields_and_every_algorithm(demo_project):
    vocabulary = read_vocabulary(demo_project)
    layers = list(demo_project.mapLayers().values())
    assert set(vocabulary.layers) == {layer.name() for layer in layers}
    schools = demo_project.mapLayersByName("schools")[0]
    assert isinstance(schools, QgsVectorLayer) and set(schools.fields().names()) <= set(vocabulary.fields)
    registry = QgsApplication.processingRegistry()
    assert list(vocabulary.algorithms) == sorted(a.id() for a in registry.algorithms())
    assert "native:buffer" in vocabulary.algorithms


def test_a_provider_added_or_removed_later_shows_in_the_next_read(demo_project):
    registry = QgsApplication.processingRegistry()
    assert "geogptlate:echo" not in read_vocabulary(demo_project).algorithms
    provider = _LateProvider()
    assert registry.addProvider(provider)
    try:
        assert "geogptlate:echo" in read_vocabulary(demo_project).algorithms
    finally:
        registry.removeProvider(provider)
    assert "geogptlate:echo" not in read_vocabulary(demo_project).algorithms


def test_the_parameters_of_an_example_algorithm_are_read_typed_with_those_the_example_sets_required(demo_project):
    import jsonschema

    names = read_vocabulary(demo_project, (("native:buffer", ("INPUT", "DISTANCE")), ("native:nosuch", ("INPUT",))))
    assert set(names.parameters) == {"native:buffer"}  # an id the registry lacks is left out
    spec = names.parameters["native:buffer"]
    assert spec["required"] == ["INPUT", "DISTANCE"]
    assert list(spec["properties"])[:2] == ["INPUT", "DISTANCE"]  # written in this order by a constrained reply
    assert "OUTPUT" not in spec["properties"]  # outputs are the runner's
    spatial = [n for n in names.layers if isinstance(demo_project.mapLayersByName(n)[0], QgsVectorLayer)]
    assert spec["properties"]["INPUT"]["enum"] == spatial  # a buffer takes vector layers: the rasters are left out
    assert len(spatial) < len(names.layers)
    jsonschema.validate({"INPUT": "rivers", "DISTANCE": 500, "SEGMENTS": 8, "DISSOLVE": True}, spec)
    jsonschema.validate({"INPUT": "rivers", "DISTANCE": 500, "END_CAP_STYLE": 1}, spec)
    wrongs = [{"INPUT": "rivers"}, {"INPUT": "<layer>", "DISTANCE": 5}, {"INPUT": "rivers", "DISTANCE": 5, "X": 1}]
    wrongs.append({"INPUT": "rivers", "DISTANCE": "500 m"})  # the runner takes a number in the layer's units
    for wrong in wrongs:
        assert not admits(spec, wrong), f"{wrong} was admitted"
    fields = read_vocabulary(demo_project, (("native:dissolve", ("INPUT", "FIELD")),)).parameters["native:dissolve"]
    assert fields["properties"]["FIELD"]["items"]["enum"] == list(names.fields)  # several fields: a list of them
    assert fields["required"] == ["INPUT"]  # FIELD is optional in QGIS: never required, even when an example sets it


def test_layer_parameters_offer_only_the_layers_of_the_kind_qgis_accepts(demo_project):
    """SmolLM2 gave countpointsinpolygon the schools as POLYGONS four times; QGIS refused it each time."""
    from qgis.core import QgsWkbTypes

    spec = read_vocabulary(demo_project, (("native:countpointsinpolygon", ("POLYGONS", "POINTS")),)).parameters
    properties = spec["native:countpointsinpolygon"]["properties"]

    def shaped(kind: str) -> list[str]:
        return [
            layer.name()
            for layer in demo_project.mapLayers().values()
            if isinstance(layer, QgsVectorLayer) and QgsWkbTypes.geometryDisplayString(layer.geometryType()) == kind
        ]

    assert set(properties["POLYGONS"]["enum"]) == set(shaped("Polygon")) and "districts" in shaped("Polygon")
    assert set(properties["POINTS"]["enum"]) == set(shaped("Point")) and "schools" in shaped("Point")
    assert "schools" not in properties["POLYGONS"]["enum"]


def test_aggregates_are_a_list_of_typed_objects_not_anything(demo_project):
    """Left free, a small model wrote AGGREGATES as {} and QGIS refused the call ("Incorrect parameter value")."""
    spec = read_vocabulary(demo_project, (("native:aggregate", ("INPUT", "GROUP_BY", "AGGREGATES")),)).parameters
    aggregate = spec["native:aggregate"]
    good = [{"aggregate": "sum", "input": '"population"', "name": "total", "type": 6}]
    assert admits(aggregate, {"INPUT": "districts", "GROUP_BY": "NULL", "AGGREGATES": good})
    for wrong in ({}, [], [{"aggregate": "sum"}], [{**good[0], "colour": "red"}]):
        assert not admits(aggregate, {"INPUT": "districts", "GROUP_BY": "NULL", "AGGREGATES": wrong})


def test_a_layer_name_a_grammar_cannot_hold_leaves_the_parameter_free(demo_project):
    """A quote in an enum broke llama-cpp-python's grammar and crashed its server (core.guided_schema.writable)."""
    parks = demo_project.mapLayersByName("parks")[0]
    parks.setName('the "green" parks')
    try:
        spec = read_vocabulary(demo_project, (("native:buffer", ("INPUT", "DISTANCE")),)).parameters["native:buffer"]
    finally:
        parks.setName("parks")
    assert "enum" not in spec["properties"]["INPUT"]
    assert admits(spec, {"INPUT": "rivers", "DISTANCE": 5})
