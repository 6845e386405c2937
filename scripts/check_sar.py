"""What the AWS Serverless Application Repository (SAR) asks of a template,
checked offline on a packaged release template (scripts/check_release.py
calls it; docs/releasing.md says what it covers and what it cannot):

* the `AWS::ServerlessRepo::Application` metadata is complete and within
  the SAR's limits (its CreateApplication API: name, description, author,
  labels; SemanticVersion the release's; an OSI licence with its file; a
  readme; both under 5 MB);
* `sam publish`'s own code (samcli's serverlessrepo module) turns the
  packaged template into a CreateApplication request the SAR API's model
  accepts (a stubbed client: nothing is sent);
* every resource type is on the SAR's list of supported resources, every
  parameter type one the SAR takes;
* no permission the SAR refuses to publish (AWSLambda_FullAccess;
  iam:*, iam:AttachRolePolicy or iam:PutRolePolicy on every resource);
* the capabilities a deployer must acknowledge, from the template as
  CloudFormation gets it, are the ones docs/releasing.md's deploy command
  passes.

Each check has a negative test: a mutated copy that must fail it.
"""

import copy
import os
import re

# The SAR's supported resource types: "List of Supported AWS Resources" in
# the AWS Serverless Application Repository Developer Guide
# (docs.aws.amazon.com/serverlessrepo/latest/devguide/list-supported-resources.html;
# the awsdocs/aws-serverlessrepo-developer-guide repository's last copy,
# with the AmazonMQ and ApiGateway::Account entries the live page adds).
SUPPORTED = set("""
AWS::AccessAnalyzer::Analyzer AWS::AmazonMQ::Broker AWS::AmazonMQ::Configuration
AWS::AmazonMQ::ConfigurationAssociation AWS::ApiGateway::Account AWS::ApiGateway::ApiKey
AWS::ApiGateway::Authorizer AWS::ApiGateway::BasePathMapping AWS::ApiGateway::ClientCertificate
AWS::ApiGateway::Deployment AWS::ApiGateway::DocumentationPart AWS::ApiGateway::DocumentationVersion
AWS::ApiGateway::DomainName AWS::ApiGateway::GatewayResponse AWS::EC2::SecurityGroup
AWS::ApiGateway::Method AWS::ApiGateway::Model AWS::ApiGateway::RequestValidator AWS::ApiGateway::Resource
AWS::ApiGateway::RestApi AWS::ApiGateway::Stage AWS::ApiGateway::UsagePlan AWS::ApiGateway::UsagePlanKey
AWS::ApiGateway::VpcLink AWS::ApiGatewayV2::Api AWS::ApiGatewayV2::ApiMapping AWS::ApiGatewayV2::Authorizer
AWS::ApiGatewayV2::DomainName AWS::ApiGatewayV2::Deployment AWS::ApiGatewayV2::Integration
AWS::ApiGatewayV2::IntegrationResponse AWS::ApiGatewayV2::Model AWS::ApiGatewayV2::Route
AWS::ApiGatewayV2::RouteResponse AWS::ApiGatewayV2::Stage AWS::AppSync::ApiKey AWS::AppSync::DataSource
AWS::AppSync::GraphQLApi AWS::AppSync::GraphQLSchema AWS::AppSync::Resolver
AWS::ApplicationAutoScaling::ScalableTarget AWS::ApplicationAutoScaling::ScalingPolicy AWS::Athena::NamedQuery
AWS::CertificateManager::Certificate AWS::CloudFormation::CustomResource AWS::CloudFormation::Interface
AWS::CloudFormation::Macro AWS::CloudFormation::WaitConditionHandle
AWS::CloudFront::CloudFrontOriginAccessIdentity AWS::CloudFront::Distribution
AWS::CloudFront::StreamingDistribution AWS::CloudTrail::Trail AWS::CloudWatch::Alarm
AWS::CloudWatch::AnomalyDetector AWS::CloudWatch::Dashboard AWS::CloudWatch::InsightRule
AWS::CodeBuild::Project AWS::CodeCommit::Repository AWS::CodePipeline::CustomActionType
AWS::CodePipeline::Pipeline AWS::CodePipeline::Webhook AWS::Cognito::IdentityPool
AWS::Cognito::IdentityPoolRoleAttachment AWS::Cognito::UserPool AWS::Cognito::UserPoolClient
AWS::Cognito::UserPoolDomain AWS::Cognito::UserPoolGroup AWS::Cognito::UserPoolResourceServer
AWS::Cognito::UserPoolUser AWS::Cognito::UserPoolUserToGroupAttachment AWS::Config::AggregationAuthorization
AWS::Config::ConfigRule AWS::Config::ConfigurationAggregator AWS::Config::ConfigurationRecorder
AWS::Config::DeliveryChannel AWS::Config::RemediationConfiguration AWS::DataPipeline::Pipeline
AWS::DynamoDB::Table AWS::ECR::Repository AWS::Elasticsearch::Domain AWS::Events::EventBusPolicy
AWS::Events::Rule AWS::EventSchemas::Discoverer AWS::EventSchemas::Registry AWS::EventSchemas::Schema
AWS::Glue::Classifier AWS::Glue::Connection AWS::Glue::Crawler AWS::Glue::Database AWS::Glue::DevEndpoint
AWS::Glue::Job AWS::Glue::Partition AWS::Glue::Table AWS::Glue::Trigger AWS::IAM::Group
AWS::IAM::InstanceProfile AWS::IAM::ManagedPolicy AWS::IAM::Policy AWS::IAM::Role AWS::IoT::Certificate
AWS::IoT::Policy AWS::IoT::PolicyPrincipalAttachment AWS::IoT::Thing AWS::IoT::ThingPrincipalAttachment
AWS::IoT::TopicRule AWS::KMS::Alias AWS::KMS::Key AWS::Kinesis::Stream AWS::Kinesis::StreamConsumer
AWS::Kinesis::Streams AWS::KinesisAnalytics::Application AWS::KinesisAnalytics::ApplicationOutput
AWS::KinesisFirehose::DeliveryStream AWS::Lambda::Alias AWS::Lambda::EventInvokeConfig
AWS::Lambda::EventSourceMapping AWS::Lambda::Function AWS::Lambda::LayerVersion
AWS::Lambda::LayerVersionPermission AWS::Lambda::Permission AWS::Lambda::Version AWS::Logs::Destination
AWS::Logs::LogGroup AWS::Logs::LogStream AWS::Logs::MetricFilter AWS::Logs::SubscriptionFilter
AWS::Route53::HealthCheck AWS::Route53::HostedZone AWS::Route53::RecordSet AWS::Route53::RecordSetGroup
AWS::S3::Bucket AWS::S3::BucketPolicy AWS::SNS::Subscription AWS::SNS::Topic AWS::SNS::TopicPolicy
AWS::SQS::Queue AWS::SQS::QueuePolicy AWS::SSM::Association AWS::SSM::Document
AWS::SSM::MaintenanceWindowTask AWS::SSM::Parameter AWS::SSM::PatchBaseline AWS::SSM::ResourceDataSync
AWS::Serverless::Api AWS::Serverless::Application AWS::Serverless::Function AWS::Serverless::HttpApi
AWS::Serverless::LayerVersion AWS::Serverless::SimpleTable AWS::Serverless::StateMachine
AWS::StepFunctions::Activity AWS::StepFunctions::StateMachine
""".split())

# The parameter types the SAR takes (its API's ParameterDefinition.type).
PARAMETER_TYPES = {"String", "Number", "List<Number>", "CommaDelimitedList"}

# Acknowledging Application Capabilities (the SAR developer guide): what
# makes a deployer pass each capability.
IAM = {"AWS::IAM::Group", "AWS::IAM::InstanceProfile", "AWS::IAM::Policy", "AWS::IAM::Role",
       "AWS::IAM::ManagedPolicy"}
IAM_NAMES = {"GroupName", "InstanceProfileName", "RoleName", "ManagedPolicyName", "PolicyName"}
RESOURCE_POLICIES = {"AWS::Lambda::Permission", "AWS::Lambda::LayerVersionPermission", "AWS::IAM::Policy",
                     "AWS::Events::EventBusPolicy", "AWS::ApplicationAutoScaling::ScalingPolicy",
                     "AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy"}

# The CreateApplication API's limits (SAR API reference, "Applications").
NAME = re.compile(r"[a-zA-Z0-9\-]{1,140}")
AUTHOR = re.compile(r"[a-z0-9](([a-z0-9]|-(?!-))*[a-z0-9])?")
LABEL = re.compile(r"[a-zA-Z0-9+\-_:/@]{1,127}")
FIVE_MB = 5 * 1024 * 1024
FIELDS = ["Name", "Description", "Author", "SpdxLicenseId", "LicenseUrl", "ReadmeUrl", "Labels",
          "HomePageUrl", "SemanticVersion", "SourceCodeUrl"]
# Licences the check knows the text of (the SAR shares publicly only OSI-approved ones).
LICENCE_TEXT = {"Apache-2.0": "Apache License\n                           Version 2.0"}


def metadata(tpl):
    return (tpl.get("Metadata") or {}).get("AWS::ServerlessRepo::Application") or {}


def metadata_problems(tpl, version, folder, licence):
    """What is missing or out of the SAR's limits in the template's metadata;
    `folder` holds its ReadmeUrl and LicenseUrl files, `licence` is the
    project's SPDX id (Cargo.toml)."""
    app = metadata(tpl)
    found = [f"{f} missing" for f in FIELDS if not app.get(f)]
    if app.get("Name") and not NAME.fullmatch(str(app["Name"])):
        found.append(f"Name {app['Name']!r} is not 1-140 of A-Za-z0-9-")
    if app.get("Description") and not 1 <= len(str(app["Description"])) <= 256:
        found.append(f"Description is {len(str(app['Description']))} characters, more than 256")
    if app.get("Author") and not (len(str(app["Author"])) <= 127 and AUTHOR.fullmatch(str(app["Author"]))):
        found.append(f"Author {app['Author']!r} is not lower-case letters, digits and single hyphens")
    labels = app.get("Labels") or []
    if len(labels) > 10:
        found.append(f"{len(labels)} labels, at most 10")
    found += [f"label {label!r} is not 1-127 of A-Za-z0-9+-_:/@" for label in labels if not LABEL.fullmatch(str(label))]
    if app.get("SemanticVersion") and str(app["SemanticVersion"]) != version:
        found.append(f"SemanticVersion {app['SemanticVersion']} is not the release's {version}")
    for url in ("HomePageUrl", "SourceCodeUrl"):
        if app.get(url) and not str(app[url]).startswith("https://"):
            found.append(f"{url} {app[url]!r} is not an https URL")
    if app.get("SpdxLicenseId") and app["SpdxLicenseId"] != licence:
        found.append(f"SpdxLicenseId {app['SpdxLicenseId']} is not the project's licence {licence}")
    for field in ("ReadmeUrl", "LicenseUrl"):
        path = os.path.join(folder, str(app.get(field, "")))
        if app.get(field) and not os.path.isfile(path):
            found.append(f"{field} {app[field]} is not a file beside the template")
        elif app.get(field) and os.path.getsize(path) > FIVE_MB:
            found.append(f"{field} {app[field]} is over 5 MB")
    text = LICENCE_TEXT.get(str(app.get("SpdxLicenseId")))
    lic = os.path.join(folder, str(app.get("LicenseUrl", "")))
    if app.get("LicenseUrl") and os.path.isfile(lic) and (not text or text not in open(lic, encoding="utf-8").read()):
        found.append(f"LicenseUrl {app['LicenseUrl']} is not the text of {app.get('SpdxLicenseId')}")
    return found


def publish_problems(packaged_text):
    """Run `sam publish`'s code on the packaged template against a stubbed
    SAR client: the CreateApplication request must satisfy the API's model
    (botocore validates it before the stub answers)."""
    import boto3
    from botocore.stub import Stubber
    from samcli.vendor.serverlessrepo.publish import publish_application

    client = boto3.client("serverlessrepo", region_name="us-east-1", aws_access_key_id="test",
                          aws_secret_access_key="test")
    stub = Stubber(client)
    app_id = "arn:aws:serverlessrepo:us-east-1:123456789012:applications/sqs-forwarder"
    stub.add_response("create_application", {"ApplicationId": app_id})
    try:
        with stub:
            out = publish_application(packaged_text, sar_client=client)
    except Exception as e:  # samcli's and botocore's own errors, named in the message
        return [f"sam publish's request is refused: {type(e).__name__}: {e}"]
    return [] if out.get("actions") == ["CREATE_APPLICATION"] else [f"sam publish did {out.get('actions')}"]


def type_problems(tpl):
    """Resource and parameter types the SAR does not take."""
    found = [f"{n}: {r.get('Type')} is not on the SAR's supported list"
             for n, r in tpl.get("Resources", {}).items() if r.get("Type") not in SUPPORTED]
    found += [f"parameter {n}: type {p.get('Type')} (the SAR takes {', '.join(sorted(PARAMETER_TYPES))})"
              for n, p in (tpl.get("Parameters") or {}).items() if p.get("Type") not in PARAMETER_TYPES]
    return found


def permission_problems(translated):
    """What the SAR refuses to publish, in the template as CloudFormation gets it."""
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            if "Effect" in node and "Action" in node:
                actions = node["Action"] if isinstance(node["Action"], list) else [node["Action"]]
                res = node.get("Resource", [])
                res = res if isinstance(res, list) else [res]
                bad = [a for a in actions if isinstance(a, str)
                       and a.lower() in ("iam:*", "iam:attachrolepolicy", "iam:putrolepolicy", "*")]
                if bad and "*" in res:
                    found.append(f"{where}: {bad} on every resource")
            for k, v in node.items():
                walk(v, where)
        elif isinstance(node, list):
            for v in node:
                walk(v, where)

    for n, r in translated.get("Resources", {}).items():
        arns = r.get("Properties", {}).get("ManagedPolicyArns", []) or []
        found += [f"{n}: managed policy {a}" for a in arns if isinstance(a, str) and a.endswith("/AWSLambda_FullAccess")]
        walk(r.get("Properties", {}), n)
    return found


def capabilities(tpl, translated):
    """The capabilities a deployer must acknowledge."""
    caps = set()
    for r in translated.get("Resources", {}).values():
        if r.get("Type") in IAM:
            named = IAM_NAMES & set(r.get("Properties", {}))
            caps.add("CAPABILITY_NAMED_IAM" if named and r["Type"] != "AWS::IAM::Policy" else "CAPABILITY_IAM")
        if r.get("Type") in RESOURCE_POLICIES:
            caps.add("CAPABILITY_RESOURCE_POLICY")
    if any(r.get("Type") == "AWS::Serverless::Application" for r in tpl.get("Resources", {}).values()):
        caps.add("CAPABILITY_AUTO_EXPAND")
    return caps


def documented_capabilities(doc):
    """The capabilities docs/releasing.md's SAR deploy command passes."""
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"create-cloud-formation-change-set(.*?)```", text, re.S)
    return set(re.findall(r"CAPABILITY_[A-Z_]+", m.group(1))) if m else set()


def check_all(check, tpl, packaged_text, translated, version, folder, licence, doc):
    """The checks above on a release's template (`tpl`, its packaged text
    and its translation), then their negative tests."""
    found = metadata_problems(tpl, version, folder, licence)
    check(not found, f"SAR metadata complete and within the SAR's limits ({len(metadata(tpl))} fields)"
          + (f": {found}" if found else ""))
    found = publish_problems(packaged_text)
    check(not found, "sam publish's code builds a CreateApplication request the SAR API model accepts (stubbed)"
          + (f": {found}" if found else ""))
    no_author = re.sub(r"^(\s+)Author: .*\n", "", packaged_text, count=1, flags=re.M)
    check(no_author != packaged_text and publish_problems(no_author),
          "negative: sam publish's code refuses the packaged template without Author")
    labels = re.sub(r"^(\s+)Labels:\n(\1- .*\n)+", r"\1Labels: sqs\n", packaged_text, count=1, flags=re.M)
    check(labels != packaged_text and publish_problems(labels),
          "negative: a request the SAR API's model refuses (Labels not a list) fails")
    found = type_problems(tpl)
    check(not found, f"every resource type ({len({r.get('Type') for r in tpl['Resources'].values()})}) and "
          "parameter type is one the SAR supports" + (f": {found}" if found else ""))
    generated = sorted({r.get("Type") for r in translated["Resources"].values()} - SUPPORTED)
    if generated:
        print(f"-- note: SAM generates {generated}, not on the SAR's list; the SAR checks the template as "
              "published (its AWS::Serverless types), and only sam publish itself can say more", flush=True)
    found = permission_problems(translated)
    check(not found, "no permission the SAR refuses (AWSLambda_FullAccess; iam:*, AttachRolePolicy, PutRolePolicy "
          "on *)" + (f": {found}" if found else ""))
    caps, doc_caps = capabilities(tpl, translated), documented_capabilities(doc)
    check(caps and caps == doc_caps, f"capabilities to acknowledge {sorted(caps)} are the ones "
          f"{os.path.relpath(doc, os.path.dirname(os.path.dirname(doc)))} passes {sorted(doc_caps)}")
    negative(check, tpl, translated, version, folder, licence)


def negative(check, tpl, translated, version, folder, licence):
    def mutated(edit, base=tpl):
        t = copy.deepcopy(base)
        edit(t)
        return t

    app = "AWS::ServerlessRepo::Application"
    check(metadata_problems(mutated(lambda t: t["Metadata"][app].pop("Author")), version, folder, licence),
          "negative: metadata without Author fails")
    check(metadata_problems(mutated(lambda t: t["Metadata"][app].update(Labels=[f"l{i}" for i in range(11)])),
                            version, folder, licence), "negative: eleven labels fail")
    check(metadata_problems(mutated(lambda t: t["Metadata"][app].update(Author="Sqs Forwarder")),
                            version, folder, licence), "negative: an author with capitals and a space fails")
    check(metadata_problems(tpl, version + "-other", folder, licence),
          "negative: a SemanticVersion other than the release's fails")
    check(metadata_problems(mutated(lambda t: t["Metadata"][app].update(LicenseUrl="README.md")),
                            version, folder, licence), "negative: a LicenseUrl that is not the licence's text fails")
    check(type_problems(mutated(lambda t: t["Resources"].update(X={"Type": "AWS::CloudWatch::CompositeAlarm"}))),
          "negative: an AWS::CloudWatch::CompositeAlarm fails the supported-types check")
    check(type_problems(mutated(lambda t: t["Parameters"].update(X={"Type": "AWS::EC2::VPC::Id"}))),
          "negative: an AWS::EC2::VPC::Id parameter fails")
    role = {"Type": "AWS::IAM::Role", "Properties": {"ManagedPolicyArns": [
        "arn:aws:iam::aws:policy/AWSLambda_FullAccess"]}}
    check(permission_problems(mutated(lambda t: t["Resources"].update(X=role), translated)),
          "negative: AWSLambda_FullAccess fails")
    stmt = {"Type": "AWS::IAM::Policy", "Properties": {"PolicyDocument": {"Statement": [
        {"Effect": "Allow", "Action": "iam:PutRolePolicy", "Resource": "*"}]}}}
    check(permission_problems(mutated(lambda t: t["Resources"].update(X=stmt), translated)),
          "negative: iam:PutRolePolicy on * fails")
    nested = mutated(lambda t: t["Resources"].update(X={"Type": "AWS::Serverless::Application"}))
    check(capabilities(nested, translated) != capabilities(tpl, translated),
          "negative: a nested application adds CAPABILITY_AUTO_EXPAND (the documented list no longer matches)")
