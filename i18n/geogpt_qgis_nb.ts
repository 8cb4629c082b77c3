<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="nb_NO" sourcelanguage="en">
<context>
    <name>GeoGPT</name>
    <message>
        <location filename="../geogpt_qgis/gui/answer_actions.py" line="26"/>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="91"/>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="98"/>
        <location filename="../geogpt_qgis/gui/markdown_view.py" line="50"/>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="54"/>
        <source>Copy</source>
        <translation>Kopier</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/answer_actions.py" line="27"/>
        <source>Copy this answer (Markdown)</source>
        <translation>Kopier dette svaret (Markdown)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/answer_actions.py" line="31"/>
        <source>Retry</source>
        <translation>Prøv igjen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/answer_actions.py" line="32"/>
        <source>Ask the same question again</source>
        <translation>Still det samme spørsmålet på nytt</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/answer_actions.py" line="44"/>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="152"/>
        <source>Copied</source>
        <translation>Kopiert</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="95"/>
        <source>Reason, if you reject (the assistant reads it)</source>
        <translation>Begrunnelse hvis du avviser (assistenten leser den)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="96"/>
        <source>Approve</source>
        <translation>Godkjenn</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="98"/>
        <source>Run this step (Ctrl+Enter)</source>
        <translation>Kjør dette steget (Ctrl+Enter)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="99"/>
        <source>Always for this tool</source>
        <translation>Alltid for dette verktøyet</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="110"/>
        <source>Approve all in this conversation</source>
        <translation>Godkjenn alt i denne samtalen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="111"/>
        <source>Reject</source>
        <translation>Avvis</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="112"/>
        <source>Do not run it; the assistant reads your reason (Ctrl+Backspace)</source>
        <translation>Ikke kjør det; assistenten leser begrunnelsen din (Ctrl+Backspace)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="113"/>
        <source>Drop</source>
        <translation>Forkast</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="114"/>
        <source>Give up this step without continuing the conversation</source>
        <translation>Gi opp dette steget uten å fortsette samtalen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="211"/>
        <source>Discard this step</source>
        <translation>Forkast dette steget</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="227"/>
        <source>Approved (edited)</source>
        <translation>Godkjent (redigert)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="227"/>
        <source>Approved</source>
        <translation>Godkjent</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="241"/>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="178"/>
        <source>Dropped</source>
        <translation>Forkastet</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="85"/>
        <source>You may edit this before approving</source>
        <translation>Du kan redigere dette før du godkjenner</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="109"/>
        <source>Code is approved one snippet at a time: each one can do anything</source>
        <translation>Kode godkjennes én bit om gangen: hver bit kan gjøre hva som helst</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="149"/>
        <source>Always</source>
        <translation>Alltid</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="150"/>
        <source>Approve all</source>
        <translation>Godkjenn alle</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="200"/>
        <source>{names} is no longer in the project: this step can no longer run as asked.</source>
        <translation>{names} finnes ikke lenger i prosjektet: dette steget kan ikke lenger kjøres slik det ble bedt om.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="237"/>
        <source>Rejected</source>
        <translation>Avvist</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="276"/>
        <source>Affects:</source>
        <translation>Berører:</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="76"/>
        <source>Approval needed: {action}</source>
        <translation>Godkjenning kreves: {action}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="102"/>
        <source>Approve, and run {tool}&apos;s steps that do no more than this one without asking again in this conversation (Ctrl+Shift+Enter)</source>
        <translation>Godkjenn, og kjør trinn fra {tool} som ikke gjør mer enn dette uten å spørre igjen i denne samtalen (Ctrl+Shift+Enter)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="229"/>
        <source>Approved (always for {tool} in this conversation)</source>
        <translation>Godkjent (alltid for {tool} i denne samtalen)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/approval_card.py" line="105"/>
        <source>this tool</source>
        <translation>dette verktøyet</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chart_view.py" line="74"/>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="58"/>
        <source>Open</source>
        <translation>Åpne</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chart_view.py" line="77"/>
        <source>Save as…</source>
        <translation>Lagre som…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chart_view.py" line="92"/>
        <source>Save chart</source>
        <translation>Lagre diagram</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chart_view.py" line="65"/>
        <source>The chart image is missing: {p}</source>
        <translation>Diagrambildet mangler: {p}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_input.py" line="61"/>
        <source>Ask about your map… (Enter sends, Shift+Enter for a new line)</source>
        <translation>Spør om kartet ditt… (Enter sender, Shift+Enter gir ny linje)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_input.py" line="64"/>
        <location filename="../geogpt_qgis/gui/chat_input.py" line="115"/>
        <source>Send</source>
        <translation>Send</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_input.py" line="74"/>
        <location filename="../geogpt_qgis/gui/options_page.py" line="95"/>
        <source>Before running code, changing data or writing files</source>
        <translation>Før kode kjøres, data endres eller filer skrives</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_input.py" line="76"/>
        <location filename="../geogpt_qgis/gui/options_page.py" line="90"/>
        <source>Ask before changes</source>
        <translation>Spør før endringer</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_input.py" line="77"/>
        <location filename="../geogpt_qgis/gui/options_page.py" line="91"/>
        <source>Trust this conversation</source>
        <translation>Stol på denne samtalen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_input.py" line="78"/>
        <location filename="../geogpt_qgis/gui/options_page.py" line="92"/>
        <source>Never allow changes</source>
        <translation>Tillat aldri endringer</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_input.py" line="115"/>
        <source>Stop</source>
        <translation>Stopp</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_panel.py" line="113"/>
        <source>The Python packages are installed: ask away.</source>
        <translation>Python-pakkene er installert: bare spør i vei.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_view.py" line="317"/>
        <location filename="../geogpt_qgis/gui/chat_view.py" line="138"/>
        <source>Thinking</source>
        <translation>Tenker</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_view.py" line="327"/>
        <location filename="../geogpt_qgis/gui/chat_view.py" line="237"/>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="244"/>
        <source>Stopped.</source>
        <translation>Stoppet.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/chat_view.py" line="239"/>
        <source>The run failed.</source>
        <translation>Kjøringen mislyktes.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/connections_chooser.py" line="28"/>
        <source>All saved connections, including ones added later</source>
        <translation>Alle lagrede tilkoblinger, også de som legges til senere</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/connections_chooser.py" line="65"/>
        <source>No PostgreSQL connection is saved in QGIS yet (Data Source Manager &gt; PostgreSQL).</source>
        <translation>Ingen PostgreSQL-tilkobling er lagret i QGIS ennå (Datakildebehandler &gt; PostgreSQL).</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/connections_chooser.py" line="107"/>
        <source>Could not check the connections&apos; roles: {}</source>
        <translation>Kunne ikke kontrollere tilkoblingenes roller: {}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/connections_chooser.py" line="124"/>
        <source>⚠ &apos;{}&apos; connects as role &apos;{}&apos;, which {}. GeoGPT&apos;s SQL runs read-only and writes need your approval, but a role that may only SELECT is the safest choice for the agent.</source>
        <translation>⚠ &apos;{}&apos; kobler til som rollen &apos;{}&apos;, som {}. SQL fra GeoGPT kjøres skrivebeskyttet, og endringer krever din godkjenning, men en rolle som bare kan lese (SELECT) er det tryggeste valget for agenten.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/connections_chooser.py" line="101"/>
        <source>Could not read the saved connections: {}</source>
        <translation>Kunne ikke lese de lagrede tilkoblingene: {}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/connections_chooser.py" line="120"/>
        <source>⚠ Could not check the role of &apos;{}&apos;: {}</source>
        <translation>⚠ Kunne ikke kontrollere rollen til &apos;{}&apos;: {}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/context_meter.py" line="24"/>
        <source>context %p%</source>
        <translation>kontekst %p%</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/context_meter.py" line="30"/>
        <source>How full the model&apos;s context window is: shown after the first request.</source>
        <translation>Hvor fullt modellens kontekstvindu er: vises etter første forespørsel.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/context_meter.py" line="38"/>
        <source>Context: {used:,} of {limit:,} tokens ({percent:.0f}%) in the last request</source>
        <translation>Kontekst: {used:,} av {limit:,} tokens ({percent:.0f} %) i siste forespørsel</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/context_meter.py" line="42"/>
        <source>; {reserved:,} kept free for the answer</source>
        <translation>; {reserved:,} holdt av til svaret</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/context_meter.py" line="44"/>
        <source>; {n} older messages summarised to fit</source>
        <translation>; {n} eldre meldinger oppsummert for å få plass</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="32"/>
        <source>Conversations</source>
        <translation>Samtaler</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="34"/>
        <source>Your conversations: resume, rename, delete, export</source>
        <translation>Samtalene dine: fortsett, gi nytt navn, slett, eksporter</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="36"/>
        <source>New conversation</source>
        <translation>Ny samtale</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="40"/>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="59"/>
        <source>Rename…</source>
        <translation>Gi nytt navn…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="41"/>
        <source>Export to Markdown…</source>
        <translation>Eksporter til Markdown…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="42"/>
        <source>Run log…</source>
        <translation>Kjørelogg…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="44"/>
        <source>Ask again for steps approved &apos;always&apos;</source>
        <translation>Spør igjen for trinn godkjent «alltid»</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="47"/>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="61"/>
        <location filename="../geogpt_qgis/gui/recipe_feedback.py" line="147"/>
        <source>Delete</source>
        <translation>Slett</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="50"/>
        <source>Serve GeoGPT&apos;s tools to other assistants (MCP)</source>
        <translation>Gi andre assistenter tilgang til GeoGPTs verktøy (MCP)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="55"/>
        <source>User guide</source>
        <translation>Brukerveiledning</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="58"/>
        <source>More for this conversation</source>
        <translation>Mer for denne samtalen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_bar.py" line="70"/>
        <source>Untitled conversation</source>
        <translation>Samtale uten tittel</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_dialogs.py" line="37"/>
        <source>Rename conversation</source>
        <translation>Gi samtalen nytt navn</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_dialogs.py" line="39"/>
        <source>New title for this conversation:</source>
        <translation>Ny tittel på denne samtalen:</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_dialogs.py" line="42"/>
        <source>e.g. Schools near rivers</source>
        <translation>f.eks. Skoler nær elver</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_dialogs.py" line="63"/>
        <source>A title cannot be empty.</source>
        <translation>Tittelen kan ikke være tom.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_dialogs.py" line="72"/>
        <source>conversation</source>
        <translation>samtale</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="119"/>
        <source>Started a new conversation.</source>
        <translation>Startet en ny samtale.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="241"/>
        <source>Export conversation</source>
        <translation>Eksporter samtale</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="241"/>
        <source>Markdown (*.md)</source>
        <translation>Markdown (*.md)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="256"/>
        <source>Delete conversation</source>
        <translation>Slett samtale</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="256"/>
        <source>Delete this conversation and its run log? This cannot be undone.</source>
        <translation>Vil du slette denne samtalen og kjøreloggen? Dette kan ikke angres.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="150"/>
        <source>Conversation restored.</source>
        <translation>Samtalen er gjenopprettet.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="152"/>
        <source>This step is waiting for your approval.</source>
        <translation>Dette steget venter på din godkjenning.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="155"/>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="246"/>
        <source>Waiting for your approval.</source>
        <translation>Venter på din godkjenning.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="185"/>
        <source>Conversation deleted.</source>
        <translation>Samtalen er slettet.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="210"/>
        <source>GeoGPT run log</source>
        <translation>GeoGPT-kjørelogg</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="225"/>
        <source>No step of this conversation was approved &apos;always&apos;.</source>
        <translation>Ingen trinn i denne samtalen var godkjent «alltid».</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="262"/>
        <source>The conversation store failed: {e}</source>
        <translation>Samtalelageret feilet: {e}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="277"/>
        <source>Selected layer {name}.</source>
        <translation>Valgte laget {name}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="200"/>
        <source>Exported to {p}</source>
        <translation>Eksportert til {p}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="273"/>
        <source>The layer {name} is no longer in the project.</source>
        <translation>Laget {name} finnes ikke lenger i prosjektet.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="223"/>
        <source>Steps of {tools} will ask for approval again.</source>
        <translation>Trinn fra {tools} vil be om godkjenning igjen.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversation_view.py" line="198"/>
        <source>Could not export: {e}</source>
        <translation>Kunne ikke eksportere: {e}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="45"/>
        <source>&lt;b&gt;Conversations&lt;/b&gt;</source>
        <translation>&lt;b&gt;Samtaler&lt;/b&gt;</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="47"/>
        <source>Only this project</source>
        <translation>Bare dette prosjektet</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="48"/>
        <source>Show only the conversations started in the project that is open now</source>
        <translation>Vis bare samtalene som ble startet i prosjektet som er åpent nå</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="56"/>
        <source>No conversations yet.</source>
        <translation>Ingen samtaler ennå.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="60"/>
        <source>Export…</source>
        <translation>Eksporter…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="62"/>
        <source>Back to chat</source>
        <translation>Tilbake til chatten</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="99"/>
        <source>no saved project</source>
        <translation>ikke noe lagret prosjekt</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="100"/>
        <source>1 turn</source>
        <translation>1 runde</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="101"/>
        <source> (current)</source>
        <translation> (gjeldende)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="105"/>
        <source>made before the project was saved</source>
        <translation>laget før prosjektet ble lagret</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/conversations_page.py" line="100"/>
        <source>{n} turns</source>
        <translation>{n} runder</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="42"/>
        <source>Which layers are in this project, and what do they hold?</source>
        <translation>Hvilke lag har dette prosjektet, og hva inneholder de?</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="38"/>
        <source>What can you do with a QGIS project?</source>
        <translation>Hva kan du gjøre med et QGIS-prosjekt?</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="39"/>
        <source>Where is Trondheim? Zoom the map there.</source>
        <translation>Hvor ligger Trondheim? Zoom kartet dit.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="40"/>
        <source>How do I add a layer from a GeoPackage?</source>
        <translation>Hvordan legger jeg til et lag fra en GeoPackage?</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="78"/>
        <source>Ask GeoGPT about your map</source>
        <translation>Spør GeoGPT om kartet ditt</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="80"/>
        <source>It reads the layers of this project, selects and counts features, runs processing tools and SQL, and asks you before it changes data or writes files. It runs on a model server you choose.</source>
        <translation>Den leser lagene i dette prosjektet, velger ut og teller objekter, kjører prosesseringsverktøy og SQL, og spør deg før den endrer data eller skriver filer. Den kjører på en modellserver du velger.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="93"/>
        <source>Copy the command, to paste it into a terminal</source>
        <translation>Kopier kommandoen for å lime den inn i en terminal</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="99"/>
        <source>Check again</source>
        <translation>Sjekk igjen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="101"/>
        <source>Server settings</source>
        <translation>Serverinnstillinger</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="103"/>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="148"/>
        <source>Try asking:</source>
        <translation>Prøv å spørre:</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="108"/>
        <source>Installing, choosing a model, what the agent may do without asking</source>
        <translation>Installasjon, valg av modell, hva agenten kan gjøre uten å spørre</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="148"/>
        <source>Once it is ready, try asking:</source>
        <translation>Når den er klar, kan du prøve å spørre:</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="163"/>
        <source>Put this question in the input box</source>
        <translation>Sett dette spørsmålet inn i skrivefeltet</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="47"/>
        <source>Which fields does {l} have, and what do its values look like?</source>
        <translation>Hvilke felt har {l}, og hvordan ser verdiene ut?</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="49"/>
        <source>How many {p} are in each of the {a}?</source>
        <translation>Hvor mange {p} ligger i hver av {a}?</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="51"/>
        <source>Zoom to {l} and select its five largest features.</source>
        <translation>Zoom til {l} og velg de fem største objektene.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="53"/>
        <source>What is the resolution and value range of {l}?</source>
        <translation>Hva er oppløsningen og verdiområdet til {l}?</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/first_run_card.py" line="106"/>
        <source>New to GeoGPT? Read the user guide</source>
        <translation>Ny i GeoGPT? Les brukerveiledningen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="37"/>
        <source>Install cancelled.</source>
        <translation>Installasjonen ble avbrutt.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="39"/>
        <source>Cannot reach PyPI (pypi.org) to download the packages. Check the internet connection or the proxy settings, then try again.</source>
        <translation>Får ikke kontakt med PyPI (pypi.org) for å laste ned pakkene. Sjekk internettilkoblingen eller mellomtjenerinnstillingene (proxy), og prøv igjen.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="56"/>
        <source>pip could not install the packages:
{detail}</source>
        <translation>pip kunne ikke installere pakkene:
{detail}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="106"/>
        <source>Install</source>
        <translation>Installer</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="109"/>
        <source>Cancel</source>
        <translation>Avbryt</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="112"/>
        <source>Show log</source>
        <translation>Vis logg</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="149"/>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="174"/>
        <source>Checking QGIS&apos;s Python…</source>
        <translation>Sjekker Python-installasjonen til QGIS…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="162"/>
        <source>GeoGPT install log</source>
        <translation>GeoGPT-installasjonslogg</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="175"/>
        <source>Looking up {name}… ({n} packages so far)</source>
        <translation>Slår opp {name}… ({n} pakker så langt)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="176"/>
        <source>Downloading {name}…</source>
        <translation>Laster ned {name}…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="177"/>
        <source>Installing {n} packages…</source>
        <translation>Installerer {n} pakker…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="178"/>
        <source>Leaving out what QGIS already has…</source>
        <translation>Utelater det QGIS allerede har…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="179"/>
        <source>Checking that everything imports…</source>
        <translation>Sjekker at alt kan importeres…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="44"/>
        <source>QGIS&apos;s Python ({python}) has no pip. Install pip for it (on Debian or Ubuntu: sudo apt install python3-pip), then try again.</source>
        <translation>Python-installasjonen til QGIS ({python}) har ikke pip. Installer pip for den (på Debian eller Ubuntu: sudo apt install python3-pip), og prøv igjen.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="49"/>
        <source>Cannot find the Python that QGIS runs on, so pip cannot be started. Install the packages from the OSGeo4W shell or a terminal: {command}</source>
        <translation>Finner ikke Python-installasjonen som QGIS kjører på, så pip kan ikke startes. Installer pakkene fra OSGeo4W Shell eller en terminal: {command}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="55"/>
        <source>The packages were installed but do not work:
{detail}</source>
        <translation>Pakkene ble installert, men fungerer ikke:
{detail}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="193"/>
        <source>Try again</source>
        <translation>Prøv igjen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="91"/>
        <source>GeoGPT needs Python packages that this QGIS does not have: {p}. Install them now? They go into your QGIS profile; nothing QGIS ships is changed.</source>
        <translation>GeoGPT trenger Python-pakker som denne QGIS-installasjonen ikke har: {p}. Vil du installere dem nå? De legges i QGIS-profilen din; ingenting som følger med QGIS, blir endret.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="201"/>
        <source>Installed, but QGIS still cannot import: {p}. Restart QGIS, or see the log.</source>
        <translation>Installert, men QGIS kan fortsatt ikke importere: {p}. Start QGIS på nytt, eller se loggen.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="210"/>
        <source>Installed in {s:.0f} s. GeoGPT is ready; restart QGIS when convenient to load the newer versions of: {p}.</source>
        <translation>Installert på {s:.0f} s. GeoGPT er klar; start QGIS på nytt når det passer, for å laste inn de nyere versjonene av: {p}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/install_banner.py" line="217"/>
        <source>Installed in {s:.0f} s. GeoGPT is ready.</source>
        <translation>Installert på {s:.0f} s. GeoGPT er klar.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/markdown_dialog.py" line="22"/>
        <source>Copy as Markdown</source>
        <translation>Kopier som Markdown</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_approvals.py" line="119"/>
        <source>Withdrawn: the MCP client hung up</source>
        <translation>Trukket tilbake: MCP-klienten koblet fra</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_approvals.py" line="108"/>
        <source>Approval needed for {client} (MCP): {action}</source>
        <translation>Godkjenning trengs for {client} (MCP): {action}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="40"/>
        <source>MCP server (other assistants)</source>
        <translation>MCP-tjener (andre assistenter)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="41"/>
        <source>Serve GeoGPT&apos;s tools to MCP clients (desktop assistants, editors)</source>
        <translation>Gi MCP-klienter (skrivebordsassistenter, editorer) tilgang til GeoGPTs verktøy</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="43"/>
        <source>127.0.0.1 keeps the server on this machine</source>
        <translation>127.0.0.1 holder tjeneren på denne maskinen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="58"/>
        <source>Copy configuration</source>
        <translation>Kopier konfigurasjonen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="66"/>
        <source>Address</source>
        <translation>Adresse</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="67"/>
        <source>Port</source>
        <translation>Port</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="69"/>
        <source>URL</source>
        <translation>URL</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="70"/>
        <source>Token</source>
        <translation>Token</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="71"/>
        <source>Client configuration</source>
        <translation>Klientkonfigurasjon</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="116"/>
        <source>The server is off.</source>
        <translation>Tjeneren er av.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="115"/>
        <source>&lt;the token, shown once the server runs&gt;</source>
        <translation>&lt;tokenet, vises når tjeneren kjører&gt;</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="110"/>
        <source>Serving at {}</source>
        <translation>Kjører på {}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="116"/>
        <source>Could not start: {}</source>
        <translation>Kunne ikke starte: {}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/mcp_options.py" line="100"/>
        <source>Refused: {}</source>
        <translation>Avvist: {}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="56"/>
        <source>Saved the PyQGIS script {p}: {n} step(s).</source>
        <translation>Lagret PyQGIS-skriptet {p}: {n} steg.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="58"/>
        <source>Saved the Processing model {p}: {n} step(s).</source>
        <translation>Lagret Processing-modellen {p}: {n} steg.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="69"/>
        <source>Processing model (*.model3)</source>
        <translation>Processing-modell (*.model3)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="69"/>
        <source>PyQGIS script (*.py)</source>
        <translation>PyQGIS-skript (*.py)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="72"/>
        <source>Export analysis as model</source>
        <translation>Eksporter analysen som modell</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="87"/>
        <source>Export as model…</source>
        <translation>Eksporter som modell…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="111"/>
        <source>Export analysis as model…</source>
        <translation>Eksporter analysen som modell…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="91"/>
        <source>Save this answer&apos;s processing steps as a Processing model or a PyQGIS script, to run again</source>
        <translation>Lagre prosesseringsstegene i dette svaret som en Processing-modell eller et PyQGIS-skript, for å kjøre dem igjen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="93"/>
        <source>No processing algorithm ran for this answer</source>
        <translation>Ingen prosesseringsalgoritme ble kjørt for dette svaret</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="136"/>
        <source>Exported; some steps are not in it.</source>
        <translation>Eksportert; noen steg er ikke med.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="64"/>
        <source>Not in it (redo these by hand): {steps}</source>
        <translation>Ikke med (gjør disse for hånd): {steps}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/model_export_actions.py" line="54"/>
        <source>Could not export the analysis: {e}</source>
        <translation>Kunne ikke eksportere analysen: {e}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="70"/>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="165"/>
        <source>Model</source>
        <translation>Modell</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="77"/>
        <source>Lower is more predictable; GeoGPT works best at 0-0.3</source>
        <translation>Lavere gir mer forutsigbare svar; GeoGPT fungerer best på 0–0,3</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="81"/>
        <location filename="../geogpt_qgis/gui/options_page.py" line="86"/>
        <source> tokens</source>
        <translation> tokens</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="82"/>
        <source>The most the model is sent at once; capped by the model&apos;s own window</source>
        <translation>Det meste modellen får tilsendt på én gang; begrenset av modellens eget kontekstvindu</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="87"/>
        <source>The longest reply the model may write; a model stuck in a loop stops there</source>
        <translation>Det lengste svaret modellen kan skrive; en modell som går i sløyfe, stopper der</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="104"/>
        <source>Native: the server&apos;s own tool calling. Guided: each reply is held to a JSON schema of the tools, for models that cannot call tools. Auto: guided only where native calls are missing or fail</source>
        <translation>Innebygd: tjenerens egne verktøykall. Styrt: hvert svar holdes til et JSON-skjema for verktøyene, for modeller som ikke kan kalle verktøy. Auto: styrt bare der innebygde kall mangler eller feiler</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="113"/>
        <source>Full: every tool. Compact: 8 tools and a shorter prompt, for small models (the rest stay reachable). Auto: compact for models under 4 B parameters or 8,192 tokens of context. Kept per conversation</source>
        <translation>Full: alle verktøy. Kompakt: 8 verktøy og en kortere ledetekst, for små modeller (resten kan fortsatt nås). Auto: kompakt for modeller under 4 mrd. parametere eller 8 192 tokens kontekst. Beholdes per samtale</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="118"/>
        <source>Agent</source>
        <translation>Agent</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="120"/>
        <source>Temperature</source>
        <translation>Temperatur</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="121"/>
        <source>Context limit</source>
        <translation>Kontekstgrense</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="122"/>
        <source>Answer length limit</source>
        <translation>Grense for svarlengde</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="123"/>
        <source>Approval</source>
        <translation>Godkjenning</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="124"/>
        <source>Tool calls</source>
        <translation>Verktøykall</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="125"/>
        <source>Tool profile</source>
        <translation>Verktøyprofil</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="128"/>
        <source>One per line: Name = URL, e.g.
City data = https://example.org/ogcapi</source>
        <translation>Én per linje: Navn = URL, f.eks.
Bydata = https://example.org/ogcapi</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="134"/>
        <source>Data sources</source>
        <translation>Datakilder</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="136"/>
        <source>OGC API Features servers</source>
        <translation>OGC API Features-tjenere</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="138"/>
        <source>PostgreSQL connections the agent may use</source>
        <translation>PostgreSQL-tilkoblinger agenten kan bruke</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="140"/>
        <source>Debug logging (Log Messages panel, GeoGPT tab)</source>
        <translation>Feilsøkingslogging (panelet Loggmeldinger, fanen GeoGPT)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="141"/>
        <source>Troubleshooting</source>
        <translation>Feilsøking</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="224"/>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="285"/>
        <source>Saving the API key…</source>
        <translation>Lagrer API-nøkkelen…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="98"/>
        <location filename="../geogpt_qgis/gui/options_page.py" line="110"/>
        <source>Auto</source>
        <translation>Auto</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="99"/>
        <source>Native</source>
        <translation>Innebygd</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="100"/>
        <source>Guided</source>
        <translation>Styrt</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="110"/>
        <source>Full</source>
        <translation>Full</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="110"/>
        <source>Compact</source>
        <translation>Kompakt</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/options_page.py" line="254"/>
        <source>Line {n}: {u!r} is not an http(s) URL.</source>
        <translation>Linje {n}: {u!r} er ikke en http(s)-URL.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/recipe_feedback.py" line="102"/>
        <source>Good answer: keep its method as a worked example for the assistant</source>
        <translation>Godt svar: ta vare på framgangsmåten som et løst eksempel for assistenten</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/recipe_feedback.py" line="133"/>
        <source>My worked examples</source>
        <translation>Mine løste eksempler</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/recipe_feedback.py" line="140"/>
        <source>No worked examples yet. When an answer did what you wanted, press 👍 under it: its steps are kept here, and the assistant follows them for similar questions.</source>
        <translation>Ingen gjennomarbeidede eksempler ennå. Når et svar gjorde det du ville, trykk 👍 under det: stegene lagres her, og assistenten følger dem for lignende spørsmål.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/recipe_feedback.py" line="124"/>
        <source>Kept as a worked example</source>
        <translation>Lagret som løst eksempel</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/recipe_feedback.py" line="116"/>
        <source>Nothing to keep: the answer used no tool</source>
        <translation>Ingenting å lagre: svaret brukte ikke noe verktøy</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/recipe_feedback.py" line="122"/>
        <source>Could not save the example</source>
        <translation>Kunne ikke lagre eksempelet</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="309"/>
        <source>The model is repeating itself, so its answer was stopped here. A larger model is likely to do better; or ask again in other words.</source>
        <translation>Modellen gjentar seg selv, så svaret ble stoppet her. En større modell vil trolig gjøre det bedre; eller spør på nytt med andre ord.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="180"/>
        <source>Dropped the step.</source>
        <translation>Steget ble forkastet.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="243"/>
        <source>Done.</source>
        <translation>Ferdig.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="245"/>
        <source>Failed.</source>
        <translation>Mislyktes.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="313"/>
        <source>The answer reached the length limit of {n} tokens and was cut off. Ask for a shorter answer, or raise the limit in the settings.</source>
        <translation>Svaret nådde lengdegrensen på {n} tokens og ble kuttet. Be om et kortere svar, eller øk grensen i innstillingene.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="171"/>
        <source>Approved; continuing…</source>
        <translation>Godkjent; fortsetter…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="171"/>
        <source>Rejected; telling the assistant…</source>
        <translation>Avvist; gir beskjed til assistenten…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="185"/>
        <source>Left for later</source>
        <translation>Utsatt til senere</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="128"/>
        <source>Thinking… ({m})</source>
        <translation>Tenker… ({m})</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="118"/>
        <source>Cannot run: missing Python packages: {p}.</source>
        <translation>Kan ikke kjøre: mangler Python-pakker: {p}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="128"/>
        <source>no model</source>
        <translation>ingen modell</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="210"/>
        <source>Running {tool}…</source>
        <translation>Kjører {tool}…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="216"/>
        <source>Thinking…</source>
        <translation>Tenker…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/run_controller.py" line="213"/>
        <source>Running {tool}… {percent:.0f}%</source>
        <translation>Kjører {tool}… {percent:.0f} %</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="103"/>
        <source>OpenAI-compatible</source>
        <translation>OpenAI-kompatibel</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="105"/>
        <source>Ollama: http://localhost:11434 · OpenAI-compatible: the URL ending in /v1</source>
        <translation>Ollama: http://localhost:11434 · OpenAI-kompatibel: URL-en som slutter på /v1</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="109"/>
        <source>The model to use; the list comes from the server</source>
        <translation>Modellen som skal brukes; listen kommer fra tjeneren</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="112"/>
        <source>Reload the server&apos;s model list</source>
        <translation>Last inn modellisten fra tjeneren på nytt</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="113"/>
        <source>API key</source>
        <translation>API-nøkkel</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="116"/>
        <source>Test connection</source>
        <translation>Test tilkoblingen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="123"/>
        <source>Provider, server URL, API key and connection test</source>
        <translation>Leverandør, server-URL, API-nøkkel og tilkoblingstest</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="132"/>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="163"/>
        <source>Provider</source>
        <translation>Leverandør</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="133"/>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="164"/>
        <source>Server URL</source>
        <translation>Tjener-URL</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="379"/>
        <source>Testing…</source>
        <translation>Tester…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="204"/>
        <source>type a key to store it in the system keychain</source>
        <translation>skriv inn en nøkkel for å lagre den i systemets nøkkelring</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="336"/>
        <source>The server has no models installed.</source>
        <translation>Tjeneren har ingen modeller installert.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="393"/>
        <source>a key is stored; type a new one to replace it</source>
        <translation>en nøkkel er lagret; skriv inn en ny for å erstatte den</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="395"/>
        <source>no key stored ($OPENAI_API_KEY is used if set); type one to store it</source>
        <translation>ingen nøkkel lagret ($OPENAI_API_KEY brukes hvis den er satt); skriv inn en for å lagre den</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_picker.py" line="366"/>
        <source>✓ This model can call tools.</source>
        <translation>✓ Denne modellen kan kalle verktøy.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="81"/>
        <source>API key saved in the system keychain.</source>
        <translation>API-nøkkelen er lagret i systemets nøkkelring.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="85"/>
        <source>This model cannot call tools natively; GeoGPT asks it for guided tool calls (Tool calls: Auto or Guided).</source>
        <translation>Denne modellen kan ikke kalle verktøy selv; GeoGPT ber den om styrte verktøykall (Verktøykall: Auto eller Styrt).</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="80"/>
        <source>API key saved in the QGIS authentication database.</source>
        <translation>API-nøkkelen er lagret i autentiseringsdatabasen til QGIS.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="93"/>
        <source>Connected: 1 model available.</source>
        <translation>Tilkoblet: 1 modell tilgjengelig.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="125"/>
        <source>Connection failed: </source>
        <translation>Tilkoblingen mislyktes: </translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="51"/>
        <source>Enter the API key for {u}, or pick a local server.</source>
        <translation>Skriv inn API-nøkkelen for {u}, eller velg en lokal server.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="94"/>
        <source>Connected: {n} models available.</source>
        <translation>Tilkoblet: {n} modeller tilgjengelig.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="108"/>
        <source>OpenAI-compatible servers usually end in /v1</source>
        <translation>OpenAI-kompatible tjenere slutter vanligvis på /v1</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="110"/>
        <source>Ollama&apos;s is usually http://localhost:11434</source>
        <translation>Ollama bruker vanligvis http://localhost:11434</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_queries.py" line="112"/>
        <source>The server at {u} has no model list there (HTTP 404). Check the server URL ({h}).</source>
        <translation>Tjeneren på {u} har ingen modelliste der (HTTP 404). Sjekk tjener-URL-en ({h}).</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="72"/>
        <source>Start your OpenAI-compatible server, or correct its URL (usually ending in /v1) and key in the settings.</source>
        <translation>Start den OpenAI-kompatible serveren din, eller rett URL-en (slutter vanligvis på /v1) og nøkkelen i innstillingene.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="82"/>
        <source>Correct the server URL or API key in the settings, then press Check again.</source>
        <translation>Rett serverens URL eller API-nøkkel i innstillingene, og trykk så Sjekk igjen.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="94"/>
        <source>Type the key in the server settings (it is kept in the system keychain), or choose Ollama.</source>
        <translation>Skriv inn nøkkelen i serverinnstillingene (den lagres i systemets nøkkelring), eller velg Ollama.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="111"/>
        <source>Reachable, but no model is installed.</source>
        <translation>Tilgjengelig, men ingen modell er installert.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="116"/>
        <source>Download a model that can call tools, then press Check again:</source>
        <translation>Last ned en modell som kan kalle verktøy, og trykk så Sjekk igjen:</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="125"/>
        <source>Models that call tools natively work better; download one, choose it above, and press Check again:</source>
        <translation>Modeller som kaller verktøy selv, fungerer bedre; last ned en, velg den over, og trykk Sjekk igjen:</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="66"/>
        <source>Start Ollama (install it from ollama.com first if needed), then press Check again:</source>
        <translation>Start Ollama (installer det fra ollama.com først om nødvendig), og trykk så Sjekk igjen:</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="104"/>
        <source>Reachable, but the server lists no model.</source>
        <translation>Tilgjengelig, men serveren viser ingen modell.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="105"/>
        <source>Load a model that can call tools in your server, then press Check again.</source>
        <translation>Last inn en modell som kan kalle verktøy i serveren din, og trykk så Sjekk igjen.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="58"/>
        <source>Checking the model server at {u}…</source>
        <translation>Sjekker modellserveren på {u}…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="71"/>
        <source>Not reachable: no server answers at {u}.</source>
        <translation>Ikke tilgjengelig: ingen server svarer på {u}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="109"/>
        <source>Reachable, but the server has no model named {m}.</source>
        <translation>Tilgjengelig, men serveren har ingen modell som heter {m}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="124"/>
        <source>Reachable, but {m} cannot call tools natively: GeoGPT asks it for guided tool calls.</source>
        <translation>Tilgjengelig, men {m} kan ikke kalle verktøy selv: GeoGPT ber den om styrte verktøykall.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="131"/>
        <source>Ready: {m} at {u}.</source>
        <translation>Klar: {m} på {u}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/server_state.py" line="65"/>
        <source>Not reachable: no Ollama server answers at {u}.</source>
        <translation>Ikke tilgjengelig: ingen Ollama-server svarer på {u}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/sources_view.py" line="35"/>
        <source>Layers</source>
        <translation>Kartlag</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/sources_view.py" line="36"/>
        <source>Tables</source>
        <translation>Tabeller</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/sources_view.py" line="37"/>
        <source>Collections</source>
        <translation>Samlinger</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/sources_view.py" line="38"/>
        <source>Algorithms</source>
        <translation>Algoritmer</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/sources_view.py" line="39"/>
        <source>Results</source>
        <translation>Resultater</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/sources_view.py" line="40"/>
        <source>Charts</source>
        <translation>Diagrammer</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/sources_view.py" line="41"/>
        <source>Files</source>
        <translation>Filer</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/sources_view.py" line="77"/>
        <source>Sources ({n})</source>
        <translation>Kilder ({n})</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/tool_step.py" line="51"/>
        <source>(none)</source>
        <translation>(ingen)</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/tool_step.py" line="52"/>
        <source>Arguments</source>
        <translation>Argumenter</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/tool_step.py" line="58"/>
        <source>Result</source>
        <translation>Resultat</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/tool_step.py" line="82"/>
        <source>running…</source>
        <translation>kjører…</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/tool_step.py" line="107"/>
        <source>Stopped before it finished.</source>
        <translation>Stoppet før det var ferdig.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/tool_step.py" line="108"/>
        <source>■ stopped</source>
        <translation>■ stoppet</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/tool_step.py" line="96"/>
        <source>running… {percent:.0f}%</source>
        <translation>kjører… {percent:.0f} %</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/undo_run_action.py" line="41"/>
        <source>Undo run</source>
        <translation>Angre kjøringen</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/undo_run_action.py" line="78"/>
        <source>Undone</source>
        <translation>Angret</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/undo_run_action.py" line="88"/>
        <source>Put the project back as it was before this run: {what}.</source>
        <translation>Sett prosjektet tilbake slik det var før denne kjøringen: {what}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/undo_run_action.py" line="109"/>
        <source>Run undone: {what}.</source>
        <translation>Kjøringen er angret: {what}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/undo_run_action.py" line="82"/>
        <source>Cannot undo this run: since it ended, {what}. Undoing it now would lose those changes; undo later runs first, or put them back.</source>
        <translation>Kan ikke angre denne kjøringen: etter at den ble ferdig, {what}. Å angre den nå ville miste disse endringene; angre senere kjøringer først, eller sett dem tilbake.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/undo_run_action.py" line="91"/>
        <source>Since the run, {what}: the view and selections of before the run come back too.</source>
        <translation>Etter kjøringen: {what}. Kartutsnittet og utvalgene fra før kjøringen kommer også tilbake.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/undo_run_action.py" line="109"/>
        <source>nothing needed changing</source>
        <translation>ingenting måtte endres</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/gui/undo_run_action.py" line="106"/>
        <source>Cannot undo this run: {why}.</source>
        <translation>Kan ikke angre denne kjøringen: {why}.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/plugin.py" line="92"/>
        <source>GeoGPT chat</source>
        <translation>GeoGPT-chat</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/plugin.py" line="94"/>
        <source>Show or hide the GeoGPT chat</source>
        <translation>Vis eller skjul GeoGPT-chatten</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/plugin.py" line="107"/>
        <source>GeoGPT user guide</source>
        <translation>Brukerveiledning for GeoGPT</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/plugin.py" line="109"/>
        <source>Open GeoGPT&apos;s user guide in your browser</source>
        <translation>Åpne brukerveiledningen for GeoGPT i nettleseren</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/plugin.py" line="142"/>
        <source>GeoGPT&apos;s result layers are saved with the project in {path}</source>
        <translation>GeoGPTs resultatlag er lagret sammen med prosjektet i {path}</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/toolbelt/auth_db.py" line="102"/>
        <source>The QGIS master password is not set, so the API key cannot be stored in the QGIS authentication database. Set it in Settings &gt; Options &gt; Authentication (or enter it when QGIS asks), or set the OPENAI_API_KEY environment variable before starting QGIS.</source>
        <translation>Hovedpassordet i QGIS er ikke satt, så API-nøkkelen kan ikke lagres i autentiseringsdatabasen til QGIS. Sett det i Innstillinger &gt; Alternativer &gt; Autentisering (eller skriv det inn når QGIS spør), eller sett miljøvariabelen OPENAI_API_KEY før du starter QGIS.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/toolbelt/auth_db.py" line="91"/>
        <source>The API key for {account} is stored in the QGIS authentication database (configuration &apos;{name}&apos;), but it could not be read: the QGIS master password that unlocks the database is not available (a run without a window cannot ask for it). Either put the master password in a file readable only by you and set QGIS_AUTH_PASSWORD_FILE to its path, or set the {env} environment variable to the key for this run, or enter the master password when QGIS asks (or in Settings &gt; Options &gt; Authentication).</source>
        <translation>API-nøkkelen for {account} er lagret i autentiseringsdatabasen til QGIS (konfigurasjonen &apos;{name}&apos;), men den kunne ikke leses: hovedpassordet i QGIS som låser opp databasen, er ikke tilgjengelig (en kjøring uten vindu kan ikke spørre etter det). Legg enten hovedpassordet i en fil som bare du kan lese, og sett QGIS_AUTH_PASSWORD_FILE til stien til filen, eller sett miljøvariabelen {env} til nøkkelen for denne kjøringen, eller skriv inn hovedpassordet når QGIS spør (eller i Innstillinger &gt; Alternativer &gt; Autentisering).</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/toolbelt/auth_db.py" line="154"/>
        <source>The QGIS authentication database refused to store the API key.</source>
        <translation>Autentiseringsdatabasen til QGIS nektet å lagre API-nøkkelen.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/toolbelt/auth_db.py" line="62"/>
        <source>No system keychain is available, and the QGIS authentication database is disabled{r}. Install a keyring backend (e.g. GNOME Keyring or KWallet), or set the OPENAI_API_KEY environment variable before starting QGIS.</source>
        <translation>Ingen nøkkelring er tilgjengelig i systemet, og autentiseringsdatabasen til QGIS er deaktivert{r}. Installer en nøkkelring-bakende (f.eks. GNOME Keyring eller KWallet), eller sett miljøvariabelen OPENAI_API_KEY før du starter QGIS.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/toolbelt/auth_db.py" line="171"/>
        <source>QGIS did not answer in time; the master password dialog may still be open.</source>
        <translation>QGIS svarte ikke i tide; dialogen for hovedpassordet kan fortsatt være åpen.</translation>
    </message>
    <message>
        <location filename="../geogpt_qgis/toolbelt/auth_db.py" line="124"/>
        <source>The API key for {account} is stored in the QGIS authentication database (configuration &apos;{name}&apos;), but it could not be decrypted with the master password given (is it the right one?). Set the {env} environment variable to the key for this run, or store the key again.</source>
        <translation>API-nøkkelen for {account} er lagret i autentiseringsdatabasen til QGIS (konfigurasjonen &apos;{name}&apos;), men den kunne ikke dekrypteres med hovedpassordet som ble gitt (er det riktig passord?). Sett miljøvariabelen {env} til nøkkelen for denne kjøringen, eller lagre nøkkelen på nytt.</translation>
    </message>
    <message>
        <source>This model cannot call tools; GeoGPT needs one that can (e.g. qwen3, llama3.1).</source>
        <translation type="obsolete">Denne modellen kan ikke kalle verktøy; GeoGPT trenger en som kan (f.eks. qwen3, llama3.1).</translation>
    </message>
    <message>
        <source>Download a model that can, choose it above, and press Check again:</source>
        <translation type="obsolete">Last ned en modell som kan det, velg den ovenfor og trykk Sjekk igjen:</translation>
    </message>
    <message>
        <source>Reachable, but {m} cannot call tools, which GeoGPT needs.</source>
        <translation type="obsolete">Tilgjengelig, men {m} kan ikke kalle verktøy, og det trenger GeoGPT.</translation>
    </message>
    <message>
        <source>New conversation.</source>
        <translation type="obsolete">Ny samtale.</translation>
    </message>
    <message>
        <source>Title:</source>
        <translation type="obsolete">Tittel:</translation>
    </message>
    <message>
        <source>ctx %p%</source>
        <translation type="obsolete">ktx %p%</translation>
    </message>
    <message>
        <source>Server URL, API key and connection test</source>
        <translation type="obsolete">Tjener-URL, API-nøkkel og tilkoblingstest</translation>
    </message>
    <message>
        <source>stored in the system keychain; type to replace</source>
        <translation type="obsolete">lagret i systemets nøkkelring; skriv for å erstatte</translation>
    </message>
    <message>
        <source>Ollama</source>
        <translation type="obsolete">Ollama</translation>
    </message>
    <message>
        <source>Installed. Restart QGIS to use the new versions of: {p}.</source>
        <translation type="obsolete">Installert. Start QGIS på nytt for å bruke de nye versjonene av: {p}.</translation>
    </message>
</context>
</TS>
